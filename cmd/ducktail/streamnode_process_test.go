package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nodesChildEnv holds the arguments of `ducktail`, a JSON array, that TestNodesChild
// runs in a process of its own.
const nodesChildEnv = "DUCKTAIL_TEST_NODES_CHILD"

// TestNodesChild runs `ducktail` with the arguments in nodesChildEnv until SIGTERM or
// SIGINT, as the binary's main does: the writer and the stream nodes of the TestNodes
// scenarios are such processes, so that each can be killed with SIGKILL and restarted.
// It does nothing in a normal run.
func TestNodesChild(t *testing.T) {
	spec := os.Getenv(nodesChildEnv)
	if spec == "" {
		t.Skip("a server process of the TestNodes scenarios")
	}
	var args []string
	if err := json.Unmarshal([]byte(spec), &args); err != nil {
		t.Fatal(err)
	}
	ctx, stop := signalContext()
	defer stop()
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(os.Stdout)
	root.SetErr(os.Stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ducktail:", err)
		os.Exit(1)
	}
}

// servingLine finds the URL in serve's "… serving" log line (text format: url=…).
var servingLine = regexp.MustCompile(`serving.* url=(\S+)`)

// serveProcess is one `ducktail serve` child process (TestNodesChild), restartable on
// the address it got at its first start.
type serveProcess struct {
	t    testing.TB
	name string
	args []string
	env  []string
	addr string
	dir  string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	// log is the stderr of every run of the process, in order.
	log *syncBuffer
	// URL is the base URL, the same across restarts.
	URL string
}

// startServe starts `ducktail serve` with args (without --addr: the process gets a free
// loopback port, and keeps it across restarts) and environment variables env, and waits
// until it serves. Its log is shown when the test fails.
func startServe(t testing.TB, name string, env []string, args ...string) *serveProcess {
	t.Helper()
	p := &serveProcess{t: t, name: name, args: args, env: env, addr: "127.0.0.1:0", dir: t.TempDir(), log: &syncBuffer{}}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("log of %s:\n%s", p.name, lastLines(p.log.String(), 300))
		}
	})
	p.start()
	return p
}

// lastLines returns the last n lines of s, leaving out the log lines of requests
// answered with 2xx.
func lastLines(s string, n int) string {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if !strings.Contains(l, "msg=request") || !strings.Contains(l, " status=2") {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// start runs the process and waits until it logs that it serves.
func (p *serveProcess) start() {
	p.t.Helper()
	args, err := json.Marshal(append([]string{"serve", "--addr", p.addr, "--log-format", "text"}, p.args...))
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNodesChild$", "-test.timeout=0")
	cmd.Dir = p.dir
	cmd.SysProcAttr = childProcAttr()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, nodesChildEnv+"="+string(args))
	cmd.Env = append(cmd.Env, p.env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	fmt.Fprintf(p.log, "=== %s: start %s\n", time.Now().Format(time.TimeOnly+".000"), args)
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	serving := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(p.log, line)
			if m := servingLine.FindStringSubmatch(line); m != nil && !found {
				found = true
				serving <- m[1]
			}
		}
		p.err = cmd.Wait()
		fmt.Fprintf(p.log, "=== %s: exited: %v\n", time.Now().Format(time.TimeOnly+".000"), p.err)
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	select {
	case u := <-serving:
		p.URL = strings.TrimSuffix(u, "/")
		p.addr = strings.TrimPrefix(strings.TrimPrefix(p.URL, "http://"), "https://")
	case <-exited:
		p.t.Fatalf("%s exited before serving: %v\n%s", p.name, p.err, lastLines(p.log.String(), 100))
	case <-time.After(2 * time.Minute):
		p.t.Fatalf("%s did not serve within 2 minutes\n%s", p.name, lastLines(p.log.String(), 100))
	}
}

// running reports whether the process is running.
func (p *serveProcess) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to exit.
func (p *serveProcess) kill() {
	if !p.running() {
		return
	}
	fmt.Fprintf(p.log, "=== %s: SIGKILL\n", time.Now().Format(time.TimeOnly+".000"))
	p.cmd.Process.Kill()
	<-p.exited
}

// stop sends SIGTERM and waits for the process to drain its streams and exit; it fails
// the test unless the process exits cleanly (a race report exits with status 66).
func (p *serveProcess) stop() {
	p.t.Helper()
	if !p.running() {
		return
	}
	fmt.Fprintf(p.log, "=== %s: SIGTERM\n", time.Now().Format(time.TimeOnly+".000"))
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.t.Fatalf("%s did not stop within a minute of SIGTERM", p.name)
	}
	if p.err != nil {
		p.t.Fatalf("%s stopped with %v", p.name, p.err)
	}
}

// clockTicks is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on Linux).
const clockTicks = 100

// cpuTime returns the CPU time (user + system) the running process has used so far,
// read from /proc/PID/stat (proc(5): fields 14 and 15, in clock ticks).
func (p *serveProcess) cpuTime() time.Duration {
	p.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		p.t.Fatal(err)
	}
	// The command name (field 2) is in parentheses and may hold spaces: the fields
	// after it start after the last ')'.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		p.t.Fatalf("/proc/%d/stat: %q", p.cmd.Process.Pid, b)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}
