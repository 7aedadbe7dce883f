package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
)

// countingFile is the file being ingested, counting the bytes read from it, in order
// (Read) or not (ReadAt, as an Arrow IPC file is read).
type countingFile struct {
	f *os.File
	n int64
	// sent, when bySent, is how many of the bytes read the chunks so far covered: a
	// record batch read whole and sent in slices counts in proportion to its rows sent.
	sent   int64
	bySent bool
}

// done is how far the ingest got through the file, in bytes.
func (c *countingFile) done() int64 {
	if c.bySent {
		return c.sent
	}
	return c.n
}

func (c *countingFile) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

func (c *countingFile) Seek(offset int64, whence int) (int64, error) {
	return c.f.Seek(offset, whence)
}

// ingestBar is the progress bar of one ingest on a terminal, advanced after every
// commit; a nil *ingestBar (not a terminal, an empty file) draws nothing. It counts rows
// when the file says how many it holds (Parquet, whose column chunks are read out of
// order), else the bytes read of the file.
type ingestBar struct {
	bar   *progressbar.ProgressBar
	total int64
	// file counts the bytes read; nil when the bar counts rows.
	file *countingFile
}

// newIngestBar draws a bar on w when w is a terminal: of src's rows when it knows their
// number, else of the size bytes of f.
func newIngestBar(w io.Writer, desc string, src chunkSource, f *countingFile, size int64) *ingestBar {
	out, ok := w.(*os.File)
	if !ok || !isatty.IsTerminal(out.Fd()) {
		return nil
	}
	b := &ingestBar{total: size, file: f}
	if n := src.rowCount(); n >= 0 {
		b.total, b.file = n, nil
	}
	if b.total <= 0 {
		return nil
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(10),
		progressbar.OptionThrottle(65 * time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionFullWidth(),
		progressbar.OptionSetRenderBlankState(true),
		// The bar's line ends when it is done, so that what follows starts a line.
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	}
	if b.file == nil {
		opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"))
	} else {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowTotalBytes(true))
	}
	b.bar = progressbar.NewOptions64(b.total, opts...)
	return b
}

// committed moves the bar after a commit that brought the rows sent to rows, short of
// the end: only finish fills it. fileDone is the bar's file progress once the committed
// chunk was read (fileDone), which a bar of bytes shows.
func (b *ingestBar) committed(rows int, fileDone int64) {
	if b == nil {
		return
	}
	done := int64(rows)
	if b.file != nil {
		done = fileDone
	}
	b.bar.Set64(min(done, b.total-1))
}

// fileDone is how far the ingest got through the file in bytes, for a bar of bytes, else
// 0. It is called where the chunks are read, which is where the file is read from.
func (b *ingestBar) fileDone() int64 {
	if b == nil || b.file == nil {
		return 0
	}
	return b.file.done()
}

// finish fills the bar and ends its line.
func (b *ingestBar) finish() {
	if b != nil {
		b.bar.Finish()
	}
}

// stop leaves the bar where it is and ends its line, for an error to follow.
func (b *ingestBar) stop() {
	if b != nil {
		b.bar.Exit()
	}
}
