// Package client is the Go consumer of a ducktail server's live streams: it subscribes to
// a table's commits over Server-Sent Events, NDJSON or JSON text sequences, decodes each
// commit's Arrow IPC payload into record batches, and keeps the stream going across
// dropped connections, server restarts and evictions without losing or repeating a
// commit (docs/design.md, "The stream" and "The atomic hand-off"; "The client contract").
// It also reads a table's snapshot a record batch at a time, in memory that does not grow
// with the table: ReadSnapshot.
//
// Two entry points for streams, both blocking until the context ends or the stream cannot
// go on:
//
//   - Stream delivers schema changes and batches, each with its opaque cursor, to the
//     handlers in Options. A handler returning nil acknowledges the event: its cursor
//     becomes the one resent as Last-Event-ID on the next connection. A delivered event
//     is not a processed one: a handler's error or panic stops the stream with that
//     batch unacknowledged, and starting again from the last acknowledged cursor (the
//     caller persists it with its work) delivers the batch again.
//   - LiveQuery adds the refresh: when the server answers refresh-required (the table was
//     reset, the cursor is too old to replay), and at the start when asked, it reads a
//     snapshot (the table, or a SQL query over it), hands it to the caller, and subscribes
//     from the cursor the snapshot returned, so that the snapshot and the batches after it
//     are exactly the table, with no de-duplication needed.
//
// A connection ends in one of three ways (docs/design.md, "Three outcomes, not two"): a
// terminal event (refresh-required or failure: the stream stops with
// *RefreshRequiredError or *FailureError, unless LiveQuery can refresh), a reconnect
// request (reconnect after the server's retry_ms with the last processed cursor), or an
// abrupt close, which is never taken for completion: the consumer reconnects with
// exponential backoff and full jitter. Silence longer than the heartbeat interval plus a
// margin counts as a dead connection. Refusals before the stream starts are typed
// *StatusError values: 429 and 503 are retried after their Retry-After, 400, 401, 403 and
// 404 stop the stream.
//
// For https:// servers the client trusts the system's certificates and Options.CAFile, or,
// when that is "", DefaultCAFile (data/tls/cert.pem, relative to the working directory,
// where `make run` writes the server's self-signed certificate) when that file exists;
// NewHTTPClient builds the same trust for a caller's own requests. A certificate that
// does not verify ends Stream and LiveQuery with ErrUntrustedCertificate. ExampleStream
// and ExampleLiveQuery are complete programs; `go test` runs them against a real server.
//
// The package imports no ducktail server package: only the standard library and
// arrow-go. It logs nothing; Options.OnStatus and Options.OnError report what happens.
package client
