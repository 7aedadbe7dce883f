package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/creack/pty"
)

// onTerminal runs the command line with args against st with stdout and stderr on a
// pseudo-terminal, as in a shell, and returns everything the terminal received.
func (st *stack) onTerminal(t *testing.T, args ...string) string {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		io.Copy(&screen, ptmx) // ends with EIO once the terminal side is closed
	}()
	root := newRootCommand()
	root.SetOut(tty)
	root.SetErr(tty)
	root.SetArgs(append(args, "--server", st.URL(), "--data-dir", st.dir))
	err = root.ExecuteContext(context.Background())
	tty.Close()
	<-read
	if err != nil {
		t.Fatalf("ducktail %s: %v\n%s", strings.Join(args, " "), err, screen.String())
	}
	return screen.String()
}

// TestIngestProgressOnATerminal ingests each kind of file on a pseudo-terminal: the bar
// counts what was read (rows for Parquet, bytes for the others) and reaches 100% before
// the summary, which starts a line of its own, with no bar drawn after it.
func TestIngestProgressOnATerminal(t *testing.T) {
	st := startStack(t)
	dir := t.TempDir()
	parquetPath := filepath.Join(dir, "small.parquet")
	writeParquet(t, parquetPath)
	streamPath := filepath.Join(dir, "flights.arrows")
	writeArrowStream(t, "../../testdata/flights-200k.arrow", streamPath)
	percent := regexp.MustCompile(`\d+%`)
	for _, c := range []struct{ table, file, unit string }{
		{"p_parquet", parquetPath, "(2500/2500, "},
		{"p_arrow", "../../testdata/flights-200k.arrow", "/1.6 MB"},
		{"p_arrows", streamPath, " MB"},
		{"p_csv", "../../testdata/birdstrikes.csv", "/1.2 MB"},
		{"p_json", "../../testdata/flights-20k.json", "/1.8 MB"},
	} {
		screen := st.onTerminal(t, "ingest", c.table, c.file, "--create", "--chunk-rows", "1000")
		bar, summary, ok := strings.Cut(screen, "ingested ")
		if !ok {
			t.Fatalf("%s: no summary:\n%q", c.file, screen)
		}
		if !strings.HasSuffix(bar, "\n") {
			t.Errorf("%s: the summary is glued onto the bar's line:\n%q", c.file, screen)
		}
		renders := percent.FindAllString(bar, -1)
		if len(renders) == 0 || renders[len(renders)-1] != "100%" {
			t.Errorf("%s: the bar before the summary ends at %v, want 100%%:\n%q", c.file, renders, bar)
		}
		if !strings.Contains(bar, c.unit) {
			t.Errorf("%s: the bar does not count %q:\n%q", c.file, c.unit, bar)
		}
		if percent.MatchString(summary) {
			t.Errorf("%s: a bar is drawn after the summary:\n%q", c.file, summary)
		}
	}
}

// TestIngestProgressCountsEveryFormat reads each kind of file in chunks, as ingest does:
// what the bar shows after each chunk (rows for Parquet, bytes for the others) grows with
// every chunk, starts well short of the whole and ends near it, so no format sits at 0%
// or jumps to 100% at its first chunk.
func TestIngestProgressCountsEveryFormat(t *testing.T) {
	dir := t.TempDir()
	parquetPath := filepath.Join(dir, "small.parquet")
	writeParquet(t, parquetPath)
	streamPath := filepath.Join(dir, "flights.arrows")
	writeArrowStream(t, "../../testdata/flights-200k.arrow", streamPath)
	for _, c := range []struct{ format, file string }{
		{"parquet", parquetPath},
		{"arrow", "../../testdata/flights-200k.arrow"},
		{"arrow", streamPath},
		{"csv", "../../testdata/birdstrikes.csv"},
		{"json", "../../testdata/flights-20k.json"},
	} {
		f, err := os.Open(c.file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		cf := &countingFile{f: f}
		src, err := newChunkSource(fileReading{format: c.format, chunkRows: 500}, cf)
		if err != nil {
			t.Fatal(err)
		}
		total, rows := st.Size(), int64(0)
		if n := src.rowCount(); n >= 0 {
			total = n
		}
		var done []int64
		for {
			ch, err := src.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			rows += int64(ch.rows)
			if src.rowCount() >= 0 {
				done = append(done, rows)
			} else {
				done = append(done, cf.done())
			}
		}
		grows := len(done) >= 4
		for i := 1; i < len(done); i++ {
			grows = grows && done[i] > done[i-1]
		}
		if !grows {
			t.Errorf("%s: progress after each chunk %v, want it to grow with every chunk", c.file, done)
			continue
		}
		// An Arrow IPC file's footer and schema are read too, so its bytes read may pass
		// its size a little; the bar stops short of its end until the summary.
		if first, last := done[0], done[len(done)-1]; first > total/2 || last < total*9/10 || last > total+64<<10 {
			t.Errorf("%s: progress goes from %d to %d of %d", c.file, first, last, total)
		}
	}
}

// writeArrowStream rewrites the Arrow IPC file src as an Arrow IPC stream at dst.
func writeArrowStream(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	fr, err := ipc.NewFileReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := ipc.NewWriter(out, ipc.WithSchema(fr.Schema()))
	for i := range fr.NumRecords() {
		rec, err := fr.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
