package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// serveChildEnv makes TestServeChild run `ducktail serve` on the data dir it holds.
const serveChildEnv = "DUCKTAIL_TEST_SERVE_CHILD"

// TestServeChild is the second server of TestSecondServeWaitsForTheLockOnce, run in its
// own process (DuckDB's file lock is per process); it does nothing in a normal run.
func TestServeChild(t *testing.T) {
	dir := os.Getenv(serveChildEnv)
	if dir == "" {
		t.Skip("run by TestSecondServeWaitsForTheLockOnce")
	}
	root := newRootCommand()
	root.SetArgs([]string{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--plaintext"})
	root.SetErr(os.Stderr)
	err := root.ExecuteContext(context.Background())
	fmt.Fprintln(os.Stderr, "ERROR:", err)
}

// TestSecondServeWaitsForTheLockOnce starts a second `ducktail serve` on a data dir this
// process serves: it logs the wait once, not once per retry, then fails naming the PID
// that holds the lock.
func TestSecondServeWaitsForTheLockOnce(t *testing.T) {
	dir := t.TempDir()
	m := startMain(t, dir, "127.0.0.1:0")
	defer m.Close(context.Background())
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$")
	cmd.Env = append(os.Environ(), serveChildEnv+"="+dir)
	out, _ := cmd.CombinedOutput()
	if n := strings.Count(string(out), "locked by another process; waiting"); n != 1 {
		t.Errorf("the wait was logged %d times, want once:\n%s", n, out)
	}
	want := fmt.Sprintf("is locked by process %d", os.Getpid())
	if !strings.Contains(string(out), "ERROR: ") || !strings.Contains(string(out), want) {
		t.Errorf("the second serve did not fail naming the lock's holder (%q):\n%s", want, out)
	}
}

// TestServeLogsItsStop runs `ducktail serve` until its context ends: after the drain its
// last log line says it stopped.
func TestServeLogsItsStop(t *testing.T) {
	var stderr lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCommand()
	root.SetArgs([]string{"serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--plaintext", "--drain-timeout", "1s"})
	root.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "ducktail serving") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace([]byte(stderr.String())), []byte("\n"))
	if last := string(lines[len(lines)-1]); !strings.Contains(last, "ducktail stopped") {
		t.Fatalf("last log line %q, want the stop:\n%s", last, stderr.String())
	}
}

// TestServeRefusesALongCommitDelay: --commit-delay past its bound is refused before
// anything opens, naming the flag.
func TestServeRefusesALongCommitDelay(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--plaintext", "--commit-delay", "1s"})
	root.SetErr(io.Discard)
	err := root.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "--commit-delay 1s") {
		t.Fatalf("serve --commit-delay 1s: %v, want a refusal naming the flag", err)
	}
}
