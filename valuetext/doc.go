// Package valuetext renders Arrow values as text: JSON (RFC 8259), plain text, and CSV
// fields (RFC 4180). It is the one value encoder of every output ducktail writes —
// snapshot JSON and CSV, stream payloads, and the CLI's printers — so a value reads the
// same wherever it is delivered. It imports arrow-go only: no cgo, no DuckDB.
package valuetext
