package stream

import (
	"fmt"
	"testing"

	"github.com/ducktail/ducktail/store"
)

func commitItem(seq, size int64) item {
	return item{event: store.CommitEvent{Position: store.Position{Seq: seq}}, commit: &sharedCommit{size: size}}
}

func seqs(items []item) []int64 {
	var out []int64
	for _, it := range items {
		out = append(out, it.event.(store.CommitEvent).Position.Seq)
	}
	return out
}

// TestTableLogKeepsTheNewestItemsAndTellsLaggards: past its item bound the log drops the
// oldest items; a reader whose next index was dropped is told it lags, one within the
// window reads on in order.
func TestTableLogKeepsTheNewestItemsAndTellsLaggards(t *testing.T) {
	l := newTableLog(4, 1<<20)
	for seq := int64(1); seq <= 6; seq++ {
		l.append(commitItem(seq, 10))
	}
	if _, lagging, _ := l.read(1, nil); !lagging {
		t.Fatal("a reader at dropped index 1 is not lagging")
	}
	items, lagging, wait := l.read(2, nil)
	if lagging || wait != nil || len(items) != 4 || seqs(items)[0] != 3 || seqs(items)[3] != 6 {
		t.Fatalf("read(2) = %v lagging=%v wait=%v, want seqs 3..6", seqs(items), lagging, wait)
	}
	if head, bytes := l.state(); head != 6 || bytes != 40 {
		t.Fatalf("state = %d, %d; want head 6 and 40 bytes held", head, bytes)
	}
}

// TestTableLogBytesBound: the log holds at most maxBytes of commits, but always the newest
// commit, however large.
func TestTableLogBytesBound(t *testing.T) {
	l := newTableLog(100, 100)
	l.append(commitItem(1, 60))
	l.append(commitItem(2, 30))
	l.append(commitItem(3, 30)) // 120 > 100: seq 1 goes
	if _, lagging, _ := l.read(0, nil); !lagging {
		t.Fatal("seq 1 is still held past the bytes bound")
	}
	if items, lagging, _ := l.read(1, nil); lagging || len(items) != 2 {
		t.Fatalf("read(1) = %v lagging=%v, want seqs 2, 3", seqs(items), lagging)
	}
	l.append(commitItem(4, 500)) // alone over the bound: kept, everything older goes
	if _, lagging, _ := l.read(2, nil); !lagging {
		t.Fatal("seq 3 is still held next to a commit over the bound")
	}
	if items, _, _ := l.read(3, nil); len(items) != 1 || seqs(items)[0] != 4 {
		t.Fatalf("read(3) = %v, want the large commit", seqs(items))
	}
	if _, bytes := l.state(); bytes != 500 {
		t.Fatalf("bytes = %d, want 500", bytes)
	}
}

// TestTableLogWakesAWaitingReader: a reader at the head gets a channel that wake closes
// after the next append, which it then reads; a read bounded by logReadBatch leaves the
// rest for the next read.
func TestTableLogWakesAWaitingReader(t *testing.T) {
	l := newTableLog(1024, 1<<20)
	items, lagging, wait := l.read(0, nil)
	if len(items) != 0 || lagging || wait == nil {
		t.Fatalf("read of an empty log = %v, %v, %v; want a wait channel", items, lagging, wait)
	}
	if !l.append(commitItem(1, 1)) {
		t.Fatal("append does not report the waiting reader")
	}
	l.wake()
	<-wait
	for seq := int64(2); seq <= logReadBatch+10; seq++ {
		l.append(commitItem(seq, 1))
	}
	if items, _, _ = l.read(0, nil); len(items) != logReadBatch {
		t.Fatalf("read took %d items, want %d", len(items), logReadBatch)
	}
	if items, _, _ = l.read(logReadBatch, nil); len(items) != 10 || seqs(items)[9] != logReadBatch+10 {
		t.Fatalf("second read = %v", seqs(items))
	}
}

// TestTableLogConcurrentReadersSeeEveryItemInOrder: readers racing one appender each see
// the items in order without a gap, up to the end or up to the moment they are told they
// lag (run under -race, it also checks the lock-free reads).
func TestTableLogConcurrentReadersSeeEveryItemInOrder(t *testing.T) {
	const total = 5000
	l := newTableLog(64, 1<<30)
	done := make(chan error, 4)
	for range 4 {
		go func() {
			var next int64
			var buf []item
			for next < total {
				items, lagging, wait := l.read(next, buf[:0])
				if lagging {
					done <- nil
					return
				}
				if wait != nil {
					<-wait
					continue
				}
				for _, it := range items {
					if got := it.event.(store.CommitEvent).Position.Seq; got != next+1 {
						done <- fmt.Errorf("read seq %d at index %d", got, next)
						return
					}
					next++
				}
				buf = items
			}
			done <- nil
		}()
	}
	for seq := int64(1); seq <= total; seq++ {
		if l.append(commitItem(seq, 1)) {
			l.wake()
		}
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
