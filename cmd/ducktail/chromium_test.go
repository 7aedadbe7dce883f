package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// chromium is headless Chromium driven by web/test/browser.mjs (playwright-core): one
// JSON command a line on its stdin, one JSON answer a line on its stdout (the script's
// comment lists the commands).
type chromium struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncBuffer
	nextID int
}

// pageState is what the driver reads from the page's DOM.
type pageState struct {
	URL     string
	Status  string
	Count   int
	Cursor  string
	Error   string
	Notices []string
	Columns []string
	// Picker is the column picker's checkboxes, in order.
	Picker      []pickedColumn
	Rows        []pageRow
	ChartPoints int `json:"chart_points"`
	Chart       chartState
	// Buttons are the class attributes of the Connect and Disconnect buttons.
	Buttons struct{ Connect, Disconnect string }
	// Problems are the console errors and uncaught exceptions the page logged.
	Problems []string
}

// pickedColumn is one checkbox of the column picker.
type pickedColumn struct {
	Name    string
	Checked bool
}

// chartState is the chart as drawn.
type chartState struct {
	// X names the x-axis: the time column charted against, or "row".
	X      string
	Hidden bool
	// Height is the chart section's height in CSS pixels.
	Height int
	// LegendX is the legend's x value: the point under the mouse after a hover.
	LegendX string `json:"legend_x"`
	// AxisInk counts the pixels drawn below the plot (the x-axis and its labels);
	// EdgeInk those of them in the canvas's last 3 pixel columns, which only a tick label
	// cut off by the canvas's right edge reaches.
	AxisInk int `json:"axis_ink"`
	EdgeInk int `json:"edge_ink"`
}

// pageRow is one rendered row: its key (the row's number in arrival order) and cells.
type pageRow struct {
	Key   int
	Cells []string
}

// until is what a wait waits for; zero fields are not checked.
type until struct {
	Status string `json:"status,omitempty"`
	Count  *int   `json:"count,omitempty"`
	// Error and Notice are substrings of the error box and of an event log entry.
	Error  string `json:"error,omitempty"`
	Notice string `json:"notice,omitempty"`
	// Columns is the rows' header, "#" first, exactly.
	Columns []string `json:"columns,omitempty"`
}

// driverSlack is added to a command's own timeout before the test gives up on the driver.
const driverSlack = 30 * time.Second

// startChromium starts the driver and waits until the browser runs; Cleanup quits it.
func startChromium(t *testing.T, node, web string) *chromium {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, filepath.Join(web, "test", "browser.mjs"))
	// Playwright closes the browser when the driver gets SIGTERM.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(cmd.Environ(), "DUCKTAIL_CHROMIUM="+chromiumPath)
	c := &chromium{cmd: cmd, lines: make(chan []byte, 16), stderr: &syncBuffer{}}
	cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			c.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	t.Cleanup(func() {
		// The driver closes the browser and exits at the end of its input.
		c.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("browser driver: %v\n%s", err, c.stderr.String())
			}
		case <-time.After(driverSlack):
			cancel()
			<-done
			t.Errorf("browser driver did not quit\n%s", c.stderr.String())
		}
		cancel()
	})
	var ready struct {
		Ready   bool
		Version string
	}
	c.read(t, &ready, driverSlack)
	if !ready.Ready {
		t.Fatalf("browser driver did not start\n%s", c.stderr.String())
	}
	t.Logf("Chromium %s", ready.Version)
	return c
}

// read decodes the driver's next line into v, failing after timeout.
func (c *chromium) read(t *testing.T, v any, timeout time.Duration) {
	t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			t.Fatalf("browser driver exited\n%s", c.stderr.String())
		}
		if err := json.Unmarshal(line, v); err != nil {
			t.Fatalf("browser driver said %q: %v", line, err)
		}
	case <-time.After(timeout):
		t.Fatalf("browser driver silent for %s\n%s", timeout, c.stderr.String())
	}
}

// send runs one command and returns its result; a failed command fails the test with
// the page's state at the time.
func (c *chromium) send(t *testing.T, cmd string, args map[string]any) json.RawMessage {
	t.Helper()
	return c.sendWithin(t, cmd, args, 0)
}

func (c *chromium) sendWithin(t *testing.T, cmd string, args map[string]any, timeout time.Duration) json.RawMessage {
	t.Helper()
	c.nextID++
	msg := map[string]any{"id": c.nextID, "cmd": cmd}
	for k, v := range args {
		msg[k] = v
	}
	line, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		t.Fatalf("browser driver: %v\n%s", err, c.stderr.String())
	}
	var answer struct {
		ID     int
		OK     bool
		Result json.RawMessage
		Error  string
		State  *pageState
	}
	c.read(t, &answer, timeout+driverSlack)
	if answer.ID != c.nextID {
		t.Fatalf("browser driver answered command %d, want %d", answer.ID, c.nextID)
	}
	if !answer.OK {
		t.Fatalf("%s %v: %s\npage state: %s", cmd, args, answer.Error, answer.State)
	}
	return answer.Result
}

// open loads url in a new page named name.
func (c *chromium) open(t *testing.T, name, url string) {
	t.Helper()
	c.send(t, "open", map[string]any{"page": name, "url": url})
}

// hover moves the mouse to the point (x, y) of the element's box, given as fractions of
// its width and height, and returns the page's state then.
func (c *chromium) hover(t *testing.T, name, selector string, x, y float64) pageState {
	t.Helper()
	res := c.send(t, "hover", map[string]any{"page": name, "selector": selector, "x": x, "y": y})
	var s pageState
	if err := json.Unmarshal(res, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// screenshot saves a full-page PNG of the page as name.png in the test's artifact
// directory (kept with go test -artifacts) and logs where.
func (c *chromium) screenshot(t *testing.T, page, name string) {
	t.Helper()
	path := filepath.Join(t.ArtifactDir(), name+".png")
	c.send(t, "screenshot", map[string]any{"page": page, "path": path})
	t.Logf("screenshot: %s", path)
}

// wait waits up to timeout for the page's state to match u and returns it.
func (c *chromium) wait(t *testing.T, name string, u until, timeout time.Duration) pageState {
	t.Helper()
	res := c.sendWithin(t, "wait", map[string]any{"page": name, "until": u, "timeout_ms": timeout.Milliseconds()}, timeout)
	var s pageState
	if err := json.Unmarshal(res, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// String renders a state for failure messages, without the bulk of its rows.
func (s *pageState) String() string {
	if s == nil {
		return "(none)"
	}
	rows := s.Rows
	if len(rows) > 5 {
		rows = rows[:5]
	}
	return fmt.Sprintf("status=%q count=%d error=%q notices=%q columns=%q first rows=%v problems=%q",
		s.Status, s.Count, s.Error, s.Notices, s.Columns, rows, s.Problems)
}
