package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/spf13/cobra"

	"github.com/ducktail/ducktail/store"
)

// chunk is one request body of an ingest: at most --chunk-rows rows and, give or take
// a row or a CSV writer's buffer, maxChunkBytes bytes; one commit.
type chunk struct {
	body        []byte
	contentType string
	rows        int
}

// defaultChunkRows is --chunk-rows by default: four of DuckDB's 122,880-row row groups.
// DuckDB writes the rows of a transaction that inserts more than one row group into a
// table straight to the database file; smaller inserts go to its write-ahead log first,
// and into the file again at the next checkpoint. Commits of four row groups take the
// server about half the CPU time of commits of 100,000 rows (BenchmarkBulk, package api).
const defaultChunkRows = 4 * 122_880

// maxChunkBytes ends a chunk before --chunk-rows rows when its body (for Arrow and
// Parquet files, its rows' Arrow buffers) reaches it, so that a file of wide rows is
// still sent in commits well under the server's default --max-body-bytes (256 MiB) and
// the default size of a table's live log of commits (--max-buffered-bytes, 64 MiB).
const maxChunkBytes = 32 << 20

// chunkSource yields the chunks of one file in order; io.EOF after the last.
type chunkSource interface {
	next() (chunk, error)
	// rowCount is the number of rows in the file when its metadata says so before it
	// is read (Parquet), else -1.
	rowCount() int64
}

func newIngestCommand(cfg *clientConfig) *cobra.Command {
	var chunkRows int
	var create bool
	var format, jsonPath string
	cmd := &cobra.Command{
		Use:   "ingest TABLE FILE",
		Short: "Send a CSV, JSON, NDJSON, Arrow IPC (file or stream) or Parquet file in commits of --chunk-rows rows",
		Long: `Send a file to a table, in commits of --chunk-rows rows each; a Parquet file of at most
32 MiB goes as it is, in one commit the server decodes, unless --chunk-rows is given or the
server refuses it whole (then in chunks). Every commit carries an
Idempotency-Key derived from the table's activation and the chunk, so a retried chunk (the
command retries network errors, 429 and 503) is never committed twice.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if chunkRows <= 0 {
				return errors.New("--chunk-rows must be positive")
			}
			c, err := cfg.newClient()
			if err != nil {
				return err
			}
			return runIngest(cmd, c, args[0], args[1], fileReading{format: format, jsonPath: jsonPath, chunkRows: chunkRows,
				chunkRowsSet: cmd.Flags().Changed("chunk-rows")}, create)
		},
	}
	cmd.Flags().IntVar(&chunkRows, "chunk-rows", defaultChunkRows, "rows per commit (fewer when a commit's body would pass 32 MiB); unless given, a Parquet file of at most 32 MiB is sent whole, in one commit")
	cmd.Flags().BoolVar(&create, "create", false, "create the table from the file's inferred schema when it does not exist")
	cmd.Flags().StringVar(&format, "format", "", "csv, json, ndjson, arrow or parquet (default: from the file extension)")
	cmd.Flags().StringVar(&jsonPath, "json-path", "", "for --format json: the array to ingest inside the document, as object keys joined by dots (features, for GeoJSON)")
	return cmd
}

// fileReading is how ingest reads a file.
type fileReading struct {
	// format is csv, json, ndjson, arrow or parquet; "" for the file extension's.
	format string
	// jsonPath names the array to ingest inside a JSON document; "" for the document.
	jsonPath  string
	chunkRows int
	// chunkRowsSet is whether --chunk-rows was given: a Parquet file is then sent in
	// chunks of that many rows, never whole (ingest_parquet.go).
	chunkRowsSet bool
}

func runIngest(cmd *cobra.Command, c *client, table, path string, how fileReading, create bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if how.format == "" {
		how.format = formatFromExtension(path)
	}
	if how.format == "parquet" && !how.chunkRowsSet && st.Size() <= maxChunkBytes {
		err := ingestFile(cmd, c, table, path, f, st.Size(), how, create, true)
		if !refusedWhole(err) {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: the server refused the file in one body (%v); sending it in commits of at most %d rows (--chunk-rows)\n", path, err, how.chunkRows)
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	return ingestFile(cmd, c, table, path, f, st.Size(), how, create, false)
}

// ingestFile sends the size bytes of f (opened from path) to table in chunks, or with
// whole in one Parquet body (ingest_parquet.go), with a progress bar.
func ingestFile(cmd *cobra.Command, c *client, table, path string, f *os.File, size int64, how fileReading, create, whole bool) error {
	cf := &countingFile{f: f}
	var src chunkSource
	var err error
	if whole {
		src, err = newWholeParquet(cf)
	} else {
		src, err = newChunkSource(how, cf)
	}
	if err != nil {
		return fmt.Errorf("%s: reading it as %s: %w", path, how.format, err)
	}
	bar := newIngestBar(cmd.ErrOrStderr(), "ingest "+filepath.Base(path), src, cf, size)
	if err := sendChunks(cmd, c, table, path, src, create, bar); err != nil {
		bar.stop()
		return err
	}
	return nil
}

// sendChunks commits every chunk of src to table, one at a time and in order, advancing
// bar after each commit, then finishes the bar and prints the summary. The next chunk is
// read and encoded while the server commits the one before.
func sendChunks(cmd *cobra.Command, c *client, table, path string, src chunkSource, create bool, bar *ingestBar) error {
	// Keys are bound to the table's current activation, so that re-sending the same file
	// after a reset commits again, while retries within this run never do.
	keyBase := "new"
	var t tableInfo
	if err := c.doJSON("GET", tablePath(table), nil, &t); err == nil {
		keyBase = t.Activation
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	chunks := readAhead(ctx, src, keyBase, bar)
	var rows, commits int
	var cursor string
	start := time.Now()
	for i := 0; ; i++ {
		next, ok := <-chunks
		if !ok {
			break
		}
		ch := next.chunk
		if next.err != nil {
			return fmt.Errorf("%s: %w", path, next.err)
		}
		query := ""
		if create && i == 0 {
			query = "?create=true"
		}
		var res struct {
			Rows   int    `json:"rows"`
			Cursor string `json:"cursor"`
		}
		if err := c.postWithRetry(ctx, tablePath(table, "/rows")+query, ch, next.key, &res); err != nil {
			return fmt.Errorf("commit %d (rows %d–%d): %w", i+1, rows+1, rows+ch.rows, err)
		}
		rows += res.Rows
		commits++
		cursor = res.Cursor
		bar.committed(rows, next.fileDone)
	}
	bar.finish()
	fmt.Fprintf(cmd.OutOrStdout(), "ingested %d rows in %d commits into %s in %s (%.0f rows/s)\ncursor %s\n",
		rows, commits, table, time.Since(start).Round(time.Millisecond), float64(rows)/time.Since(start).Seconds(), cursor)
	return nil
}

// readChunk is one chunk read ahead, or the error that ended reading; key is its
// Idempotency-Key, fileDone the bar's file progress once it was read (ingestBar.fileDone).
type readChunk struct {
	chunk
	key      string
	fileDone int64
	err      error
}

// readAhead reads the chunks of src in a goroutine, one ahead of the one being sent, each
// with its Idempotency-Key: of keyBase, the chunk's index and its body. It closes the
// channel after the last chunk or the first error, or when ctx ends.
func readAhead(ctx context.Context, src chunkSource, keyBase string, bar *ingestBar) <-chan readChunk {
	out := make(chan readChunk, 1)
	go func() {
		defer close(out)
		for i := 0; ; i++ {
			ch, err := src.next()
			if errors.Is(err, io.EOF) {
				return
			}
			sum := sha256.New()
			sum.Write([]byte(keyBase + "\x00" + fmt.Sprint(i) + "\x00"))
			sum.Write(ch.body)
			select {
			case out <- readChunk{chunk: ch, key: hex.EncodeToString(sum.Sum(nil)[:16]), fileDone: bar.fileDone(), err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// postWithRetry posts one chunk, retrying transport errors, 429 and 503 with backoff
// (honouring Retry-After) under the same Idempotency-Key.
func (c *client) postWithRetry(ctx context.Context, path string, ch chunk, key string, out any) error {
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		req, err := c.request("POST", path, bytes.NewReader(ch.body))
		if err != nil {
			return err
		}
		req = req.WithContext(ctx)
		req.Header.Set("Content-Type", ch.contentType)
		req.Header.Set("Idempotency-Key", key)
		resp, err := c.http.Do(req)
		wait := backoff
		if err == nil {
			if resp.StatusCode/100 == 2 {
				defer resp.Body.Close()
				return json.NewDecoder(resp.Body).Decode(out)
			}
			perr := readProblem(resp)
			resp.Body.Close()
			if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
				return perr
			}
			if s, perr := time.ParseDuration(resp.Header.Get("Retry-After") + "s"); perr == nil {
				wait = s
			}
			err = perr
		}
		if errors.As(err, new(*tls.CertificateVerificationError)) {
			return c.explainTLS(err)
		}
		if attempt == 6 || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff *= 2
	}
}

func formatFromExtension(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json", ".geojson":
		return "json"
	case ".ndjson", ".jsonl":
		return "ndjson"
	case ".arrow", ".arrows", ".feather", ".ipc":
		return "arrow"
	case ".parquet":
		return "parquet"
	}
	return "csv"
}

func newChunkSource(how fileReading, f *countingFile) (chunkSource, error) {
	if how.jsonPath != "" && how.format != "json" {
		return nil, fmt.Errorf("--json-path is for --format json, not %s", how.format)
	}
	rows := how.chunkRows
	switch how.format {
	case "csv":
		return newCSVChunks(f, rows)
	case "json":
		return newJSONChunks(f, rows, how.jsonPath)
	case "ndjson":
		return &ndjsonChunks{sc: newLineScanner(f), rows: rows}, nil
	case "arrow":
		return newArrowChunks(f, rows)
	case "parquet":
		return newParquetChunks(f, rows)
	}
	return nil, fmt.Errorf("--format %q: use csv, json, ndjson, arrow or parquet", how.format)
}

// csvChunks re-encodes the records of a CSV file (RFC 4180), header first in every chunk.
type csvChunks struct {
	r      *csv.Reader
	header []string
	rows   int
}

func newCSVChunks(r io.Reader, rows int) (*csvChunks, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read CSV header: %w", err)
	}
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	return &csvChunks{r: cr, header: header, rows: rows}, nil
}

func (c *csvChunks) rowCount() int64 { return -1 }

func (c *csvChunks) next() (chunk, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(c.header)
	n := 0
	for n < c.rows && buf.Len() < maxChunkBytes {
		rec, err := c.r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return chunk{}, err
		}
		w.Write(rec)
		n++
	}
	w.Flush()
	if n == 0 {
		return chunk{}, io.EOF
	}
	return chunk{body: buf.Bytes(), contentType: "text/csv", rows: n}, w.Error()
}

// ndjsonChunks groups the non-blank lines of an NDJSON file.
type ndjsonChunks struct {
	sc   *bufio.Scanner
	rows int
}

func newLineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return sc
}

func (c *ndjsonChunks) rowCount() int64 { return -1 }

func (c *ndjsonChunks) next() (chunk, error) {
	var buf bytes.Buffer
	n := 0
	for n < c.rows && buf.Len() < maxChunkBytes && c.sc.Scan() {
		line := bytes.TrimSpace(c.sc.Bytes())
		if len(line) == 0 {
			continue
		}
		buf.Write(line)
		buf.WriteByte('\n')
		n++
	}
	if err := c.sc.Err(); err != nil {
		return chunk{}, err
	}
	if n == 0 {
		return chunk{}, io.EOF
	}
	return chunk{body: buf.Bytes(), contentType: "application/x-ndjson", rows: n}, nil
}

// recordChunks slices record batches into Arrow IPC stream bodies of at most rows rows.
type recordChunks struct {
	// schema is the batches' schema, sent as narrowSchema makes it.
	schema  *arrow.Schema
	nextRec func() (arrow.RecordBatch, error)
	rows    int
	cur     arrow.RecordBatch
	off     int64
	// rowBytes is the Arrow buffer bytes per row of cur, at least 1.
	rowBytes int64
	// lastBody is the size of the last chunk's body, which the next one is likely to
	// have: its buffer is allocated at that size at once instead of growing to it.
	lastBody int
	// total is the file's row count when known (Parquet), else -1.
	total int64
	// file, for Arrow IPC, is the file the batches are read from, whose progress is
	// the bytes before cur plus cur's bytes in proportion to its rows sent; recStart and
	// recEnd are its bytes read before and after cur.
	file             *countingFile
	recStart, recEnd int64
}

func (c *recordChunks) rowCount() int64 { return c.total }

func (c *recordChunks) next() (chunk, error) {
	var buf bytes.Buffer
	buf.Grow(c.lastBody + c.lastBody/8)
	wire := narrowSchema(c.schema)
	w := ipc.NewWriter(&buf, ipc.WithSchema(wire))
	n, size := 0, int64(0)
	for n < c.rows {
		if c.cur == nil || c.off >= c.cur.NumRows() {
			if c.file != nil {
				c.recStart = c.file.n
			}
			rec, err := c.nextRec()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return chunk{}, err
			}
			c.cur, c.off = rec, 0
			c.rowBytes = max(1, store.RecordBytes(rec)/max(1, rec.NumRows()))
			if c.file != nil {
				c.recEnd = c.file.n
			}
			continue
		}
		take := min(int64(c.rows-n), c.cur.NumRows()-c.off, (maxChunkBytes-size)/c.rowBytes)
		if take <= 0 {
			if n > 0 {
				break
			}
			take = 1
		}
		size += take * c.rowBytes
		slice := c.cur.NewSlice(c.off, c.off+take)
		sent, err := narrowRecord(slice, wire)
		slice.Release()
		if err != nil {
			return chunk{}, err
		}
		err = w.Write(sent)
		sent.Release()
		if err != nil {
			return chunk{}, err
		}
		c.off += take
		n += int(take)
		if c.file != nil {
			c.file.sent = c.recStart + (c.recEnd-c.recStart)*c.off/c.cur.NumRows()
		}
	}
	if err := w.Close(); err != nil {
		return chunk{}, err
	}
	if n == 0 {
		return chunk{}, io.EOF
	}
	c.lastBody = buf.Len()
	return chunk{body: buf.Bytes(), contentType: "application/vnd.apache.arrow.stream", rows: n}, nil
}

// newArrowChunks reads an Arrow IPC file (it starts with the magic "ARROW1") or stream
// from f as it goes.
func newArrowChunks(f *countingFile, rows int) (*recordChunks, error) {
	f.bySent = true
	br := bufio.NewReader(f)
	magic, err := br.Peek(6)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if bytes.Equal(magic, []byte("ARROW1")) {
		fr, err := ipc.NewFileReader(f)
		if err != nil {
			return nil, err
		}
		i := 0
		return &recordChunks{schema: fr.Schema(), rows: rows, total: -1, file: f, nextRec: func() (arrow.RecordBatch, error) {
			if i >= fr.NumRecords() {
				return nil, io.EOF
			}
			i++
			return fr.RecordBatch(i - 1)
		}}, nil
	}
	sr, err := ipc.NewReader(br)
	if err != nil {
		return nil, err
	}
	return &recordChunks{schema: sr.Schema(), rows: rows, total: -1, file: f, nextRec: func() (arrow.RecordBatch, error) {
		if !sr.Next() {
			if err := sr.Err(); err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		rec := sr.RecordBatch()
		rec.Retain()
		return rec, nil
	}}, nil
}

// newParquetChunks reads a Parquet file through pqarrow in batches of rows.
func newParquetChunks(f *countingFile, rows int) (*recordChunks, error) {
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(rows)}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, err
	}
	return &recordChunks{schema: rr.Schema(), rows: rows, total: pf.NumRows(), nextRec: func() (arrow.RecordBatch, error) {
		if !rr.Next() {
			if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, io.EOF
		}
		rec := rr.RecordBatch()
		rec.Retain()
		return rec, nil
	}}, nil
}
