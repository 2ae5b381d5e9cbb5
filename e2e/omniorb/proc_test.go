//go:build linux

package omniorb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// output collects a process's stdout or stderr and lets tests wait for
// lines. Safe for concurrent use.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

func (o *output) snapshot() (string, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String(), o.changed
}

func (o *output) String() string {
	s, _ := o.snapshot()
	return s
}

// lines returns the complete lines written so far.
func (o *output) lines() []string {
	s := o.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}

// proc is a process started by a test, in a process group of its own,
// killed with its group when the test ends.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser // nil unless started with a stdin pipe
	stdout *output
	stderr *output
	exited chan struct{} // closed once the process has exited and its output is copied
	err    error         // cmd.Wait's error; read after exited
}

type procOpts struct {
	env   []string // added to the test's environment
	stdin bool     // give the process a stdin pipe (proc.stdin)
}

// startProc starts path with args.
func startProc(t *testing.T, name string, opts procOpts, path string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, stdout: newOutput(), stderr: newOutput(), exited: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.Env = append(os.Environ(), opts.env...)
	// A process group of its own so that the whole of it can be killed;
	// SIGKILL if this test process dies first.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Output still held by a stray child does not keep Wait waiting long.
	p.cmd.WaitDelay = 5 * time.Second
	if opts.stdin {
		w, err := p.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		p.stdin = w
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s (%s %s): %v", name, path, strings.Join(args, " "), err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.cleanup(t) })
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) cleanup(t *testing.T) {
	if p.stdin != nil {
		_ = p.stdin.Close()
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("%s (pid %d) still running 10s after SIGKILL", p.name, p.pid())
	}
	if t.Failed() {
		t.Logf("%s (pid %d) stdout:\n%s", p.name, p.pid(), p.stdout)
		t.Logf("%s (pid %d) stderr:\n%s", p.name, p.pid(), p.stderr)
	}
}

// waitOutput waits until the process has written a match of re to its
// stdout and returns the submatches; it fails the test when the process
// exits or ctx ends first.
func (p *proc) waitOutput(ctx context.Context, t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	return p.wait(ctx, t, p.stdout, re)
}

// waitStderr is waitOutput on stderr.
func (p *proc) waitStderr(ctx context.Context, t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	return p.wait(ctx, t, p.stderr, re)
}

func (p *proc) wait(ctx context.Context, t *testing.T, o *output, re *regexp.Regexp) []string {
	t.Helper()
	for {
		s, changed := o.snapshot()
		if m := re.FindStringSubmatch(s); m != nil {
			return m
		}
		select {
		case <-changed:
		case <-p.exited:
			if m := re.FindStringSubmatch(o.String()); m != nil {
				return m
			}
			t.Fatalf("%s exited (%v) without writing %q", p.name, p.err, re)
		case <-ctx.Done():
			t.Fatalf("%s did not write %q: %v", p.name, re, ctx.Err())
		}
	}
}

// exit waits for the process to exit and returns its exit code (-1 when
// killed by a signal).
func (p *proc) exit(ctx context.Context, t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-ctx.Done():
		t.Fatalf("%s (pid %d) did not exit: %v", p.name, p.pid(), ctx.Err())
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", p.name, p.err)
	return 0
}

// kill9 kills the process (not its group) with SIGKILL and waits until it
// is gone.
func (p *proc) kill9(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing %s: %v", p.name, err)
	}
	if code := p.exit(ctx, t); code != -1 {
		t.Fatalf("%s exited with %d after SIGKILL, want death by signal", p.name, code)
	}
}

// jsonLines decodes the lines of s that are JSON objects into values of T
// chosen by keep.
func jsonLines[T any](t *testing.T, s string, keep func(line string) bool) []T {
	t.Helper()
	var out []T
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") || !keep(line) {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("decoding %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// testContext returns a context ending after d or when the test ends.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// needCI skips the test for a missing dependency, or fails it when
// CI=true.
func needCI(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (required with CI=true; scripts/test.sh installs it)", msg)
	}
	t.Skipf("%s; scripts/test.sh installs it", msg)
}
