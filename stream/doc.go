// Package stream is ducktail's in-memory stream hub: subscriptions reading bounded per-table logs,
// replay from the table, framing as Server-Sent Events, NDJSON or JSON
// text sequences, heartbeats, terminal events and the drain on shutdown (docs/design.md, "The
// stream" and "The cursor"). It imports no net/http: the api
// package negotiates, then writes the frames a Session hands it.
package stream
