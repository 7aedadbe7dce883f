// Package ingest turns the body of an ingest request into one Arrow record batch for one
// commit and commits it (docs/design.md, "Ingest"): DecoderFor picks the decoder of a
// media type (CSV, JSON, NDJSON, Arrow IPC, Parquet), a Decoder infers a new table's
// columns and decodes a body under a table's schema, and Ingester.Ingest is the whole
// operation.
// Every refusal is a *store.Error naming the row, line and column of bad input.
package ingest

import (
	"errors"
	"fmt"
	"mime"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/store"
)

// Decoder turns one request body of POST /v1/tables/{table}/rows into one Arrow record
// batch for one commit (docs/design.md, "Ingest": one request = one commit, all or nothing).
// Implementations hold no state between calls and are safe for concurrent use.
type Decoder interface {
	// Infer returns the column specs a new table gets when created from this body
	// (?create=true), in the body's column order, each name checked with
	// store.ValidateColumnName and each type spelled as a store.Type. Errors are
	// *store.Error: CodeInvalid for malformed bodies and bad or duplicate names,
	// CodeUnprocessable when no column type fits the values (Row, Line and Column set).
	Infer(body []byte) ([]store.ColumnSpec, error)
	// Decode returns one record whose schema is exactly s.Arrow() (same field order,
	// names and types), holding every row of the body; it may have zero rows. Input
	// fields are matched to columns by name, exact first, then case-insensitive
	// (store.Schema.Column); columns the body does not mention are NULL. Errors are
	// *store.Error: CodeInvalid for malformed syntax (Line set when known),
	// CodeUnprocessable for an unknown field or a value that does not fit its column
	// (Row, Line and Column set), CodeTooLarge for a body that expands past the
	// decoder's memory budget. The record is held in Go memory (garbage-collected,
	// Release is optional) and never refers to body, which the caller may reuse.
	Decode(body []byte, s *store.Schema) (arrow.RecordBatch, error)
}

// leasedDecoder is a Decoder whose reader allocates through a budgetAllocator (Arrow IPC,
// Parquet): Ingester.Ingest books those allocations to a lease of the request's
// MemoryBudget, which the decoder prepays before reading with what the reader may
// allocate where no recover reaches. Errors are Decode's, and the budget's Exhausted
// error when the lease was refused.
type leasedDecoder interface {
	decodeLeased(body []byte, s *store.Schema, l *lease) (arrow.RecordBatch, error)
}

// Media types accepted by POST /v1/tables/{table}/rows (docs/design.md, "Ingest").
const (
	mediaCSV         = "text/csv"                            // RFC 4180, header row required
	mediaJSON        = "application/json"                    // RFC 8259, an array of objects
	mediaNDJSON      = "application/x-ndjson"                // NDJSON spec 1.0, one object per line
	mediaJSONL       = "application/jsonl"                   // JSON Lines, read as NDJSON
	mediaArrowStream = "application/vnd.apache.arrow.stream" // Arrow IPC streaming format
	mediaArrowFile   = "application/vnd.apache.arrow.file"   // Arrow IPC file format
	mediaParquet     = "application/vnd.apache.parquet"      // Apache Parquet file format
)

// DecoderFor returns the decoder for a Content-Type header value. The media type is
// compared case-insensitively and its parameters (charset and others) are ignored
// (RFC 9110, section 8.3.1); every body is read as UTF-8. An empty, malformed or
// unsupported value yields a CodeUnsupportedMediaType *store.Error.
func DecoderFor(contentType string) (Decoder, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		mt = ""
	}
	switch mt {
	case mediaCSV:
		return csvDecoder{}, nil
	case mediaJSON:
		return jsonDecoder{}, nil
	case mediaNDJSON, mediaJSONL:
		return jsonDecoder{ndjson: true}, nil
	case mediaArrowStream:
		return arrowDecoder{}, nil
	case mediaArrowFile:
		return arrowDecoder{file: true}, nil
	case mediaParquet:
		return parquetDecoder{}, nil
	}
	return nil, &store.Error{
		Code: store.CodeUnsupportedMediaType,
		Message: "unsupported Content-Type " + quoteValue(contentType) + "; send " + mediaCSV + ", " +
			mediaJSON + ", " + mediaNDJSON + ", " + mediaArrowStream + ", " + mediaArrowFile + " or " + mediaParquet,
	}
}

// Compile-time checks that every decoder satisfies Decoder.
var (
	_ Decoder = csvDecoder{}
	_ Decoder = jsonDecoder{}
	_ Decoder = arrowDecoder{}
	_ Decoder = parquetDecoder{}

	_ leasedDecoder = arrowDecoder{}
	_ leasedDecoder = parquetDecoder{}
)

// valueError returns the CodeUnprocessable *store.Error for a value that does not fit
// its column; the decoder that called the parser fills in Row, Line and Column.
func valueError(msg string) *store.Error {
	return &store.Error{Code: store.CodeUnprocessable, Message: msg}
}

// locate fills in the row, line and column of err when it is a *store.Error that does
// not carry them yet, and returns err.
func locate(err error, row, line int, column string) error {
	var e *store.Error
	if errors.As(err, &e) {
		if e.Row == 0 {
			e.Row = row
		}
		if e.Line == 0 {
			e.Line = line
		}
		if e.Column == "" {
			e.Column = column
		}
	}
	return err
}

// atRow sets the row and the line where that row starts on err when it is a
// *store.Error, and returns err.
func atRow(err error, row, line int) error {
	var e *store.Error
	if errors.As(err, &e) {
		e.Row, e.Line = row, line
	}
	return err
}

// shown is an input value as an error message shows it, rendered only when an error
// is made: bare for JSON numbers and literals, quoted otherwise, cut after maxShown
// bytes.
type shown struct {
	text string
	bare bool
}

// String renders the value: bare text cut to maxShown bytes, or quoteValue.
func (in shown) String() string {
	if in.bare {
		return cut(in.text)
	}
	return quoteValue(in.text)
}

// maxShown is how many bytes of an input value an error message shows.
const maxShown = 64

// quoteValue quotes an input value for an error message: Go-escaped so that messages
// stay on one line, and cut after maxShown bytes.
func quoteValue(s string) string {
	if len(s) <= maxShown {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:cutPoint(s)]) + "…"
}

// cut shortens text that needs no quoting (JSON numbers and raw JSON) to maxShown bytes.
func cut(s string) string {
	if len(s) <= maxShown {
		return s
	}
	return s[:cutPoint(s)] + "…"
}

// cutPoint is the largest rune boundary at or before maxShown.
func cutPoint(s string) int {
	n := maxShown
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return n
}

// The memory a CSV, JSON or NDJSON body may decode to: a base plus a multiple of the
// body's size. Rows are bounded by it divided by the width of a row of the table, so
// that a few bytes per row ("{}" into a table of many columns) cannot make gigabytes.
const (
	textBaseBudget = 64 << 20
	textExpansion  = 16
)

// textRowLimit returns how many rows of schema s a text body of n bytes may hold.
func textRowLimit(n int, s *store.Schema) int {
	return int((textBaseBudget + textExpansion*int64(n)) / rowBytes(s))
}

// rowLimitError refuses a body past its row limit.
func rowLimitError(limit int) error {
	return &store.Error{Code: store.CodeTooLarge,
		Message: fmt.Sprintf("the body decodes to more than %d rows of this table, past the memory one request may use; send smaller commits", limit)}
}
