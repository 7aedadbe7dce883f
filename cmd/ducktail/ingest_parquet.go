package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// A Parquet file of at most maxChunkBytes is sent as it is, in one body of Content-Type
// application/vnd.apache.parquet that the server decodes (docs/api.md, "Ingest"): the
// file is already compressed and columnar, so the client neither decodes it nor encodes
// Arrow IPC, and the body is a fraction of the Arrow it decodes to (13 MiB against
// about 110 MiB for the 3M-row flights file, which the server then loads in one commit). When
// --chunk-rows is given, or the server refuses the file whole (413: it decodes past the
// server's budget; 415: a server without Parquet bodies), its rows go in Arrow IPC
// chunks of --chunk-rows rows instead.

// parquetContentType is the media type of a Parquet file (IANA registration).
const parquetContentType = "application/vnd.apache.parquet"

// wholeParquet is the chunk source of a Parquet file sent whole: one chunk.
type wholeParquet struct {
	body []byte
	rows int64
	sent bool
}

// newWholeParquet reads all of f and the row count its footer gives.
func newWholeParquet(f *countingFile) (*wholeParquet, error) {
	body, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	pf, err := file.NewParquetReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return &wholeParquet{body: body, rows: pf.NumRows()}, nil
}

func (p *wholeParquet) rowCount() int64 { return p.rows }

func (p *wholeParquet) next() (chunk, error) {
	if p.sent {
		return chunk{}, io.EOF
	}
	p.sent = true
	return chunk{body: p.body, contentType: parquetContentType, rows: int(p.rows)}, nil
}

// refusedWhole reports whether err is the server refusing a whole Parquet file for what
// sending it in Arrow chunks avoids: 413 or 415.
func refusedWhole(err error) bool {
	var p *problemError
	return errors.As(err, &p) && (p.Status == http.StatusRequestEntityTooLarge || p.Status == http.StatusUnsupportedMediaType)
}
