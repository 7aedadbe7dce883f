package store_test

import (
	"bufio"
	"context"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ducktail/ducktail/store"
)

// BenchmarkRestartAfterKill9 measures the time from start to ready (store.Open returned)
// after a kill -9 at a random moment of a sustained small-commit load: a child process
// appends 10-row commits from 8 goroutines for 2 to 20 s, is killed, and the file is
// opened again. What Open costs is the replay of the WAL, which the checkpoint policy
// bounds (checkpoint.go). Reports the worst and the median of the cycles, and the WAL size
// found at each open.
func BenchmarkRestartAfterKill9(b *testing.B) {
	if os.Getenv("DUCKTAIL_KILL9_CHILD") != "" {
		b.Skip("child mode runs in TestKill9Child")
	}
	const cycles = 6
	var opens []time.Duration
	var maxWAL int64
	for range b.N {
		for range cycles {
			path := filepath.Join(b.TempDir(), "ducktail.duckdb")
			cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$", "-test.bench=^$")
			cmd.Env = append(os.Environ(), "DUCKTAIL_KILL9_CHILD="+path, "DUCKTAIL_KILL9_CLIENTS=8")
			out, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			// Read acknowledgements until the kill moment.
			kill := time.After(2*time.Second + rand.N(18*time.Second))
			acks := make(chan struct{})
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "ACK ") {
						select {
						case acks <- struct{}{}:
						default:
						}
					}
				}
			}()
			<-acks
			<-kill
			cmd.Process.Kill()
			cmd.Wait()
			fi, err := os.Stat(path + ".wal")
			if err == nil {
				maxWAL = max(maxWAL, fi.Size())
			}
			db := store.NewDB(path)
			db.Logger = slog.New(slog.DiscardHandler)
			start := time.Now()
			if err := db.Open(context.Background()); err != nil {
				b.Fatal(err)
			}
			opens = append(opens, time.Since(start))
			db.Close()
		}
	}
	slices.Sort(opens)
	b.ReportMetric(float64(opens[len(opens)-1].Microseconds())/1000, "max-restart-ms")
	b.ReportMetric(float64(opens[len(opens)/2].Microseconds())/1000, "p50-restart-ms")
	b.ReportMetric(float64(maxWAL)/(1<<20), "max-wal-MiB")
}
