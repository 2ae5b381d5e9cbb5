//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// output collects a process's stdout or stderr and lets tests wait for a
// line. Safe for concurrent use.
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

// snapshot returns what was written so far and a channel closed on the
// next write.
func (o *output) snapshot() (string, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String(), o.changed
}

func (o *output) String() string {
	s, _ := o.snapshot()
	return s
}

// proc is a process started by a test, in a process group of its own.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdout *output
	stderr *output
	exited chan struct{} // closed once the process has exited
	copied chan struct{} // closed once its stdout and stderr are closed and copied
	err    error         // cmd.Wait's error; read after exited
}

// startProc starts the fulcrum binary with args. When the test ends, a
// process that exited on its own must have left nothing of its process
// group alive; one still running is killed with its group. On failure its
// output is logged.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, stdout: newOutput(), stderr: newOutput(), exited: make(chan struct{}), copied: make(chan struct{})}
	p.cmd = exec.Command(fulcrumBin, args...)
	// Pipes of our own rather than exec's, so that Wait returns when the
	// process exits even if a child of it still holds its output.
	var copies sync.WaitGroup
	for _, o := range []*output{p.stdout, p.stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		if o == p.stdout {
			p.cmd.Stdout = w
		} else {
			p.cmd.Stderr = w
		}
		copies.Add(1)
		go func() {
			defer copies.Done()
			defer r.Close()
			_, _ = io.Copy(o, r)
		}()
		defer w.Close() // the child has its copy once started
	}
	go func() {
		copies.Wait()
		close(p.copied)
	}()
	// Its own group, so that its children can be found and killed too;
	// SIGKILL if this test process dies first.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s (fulcrum %s): %v", name, strings.Join(args, " "), err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.cleanup(t) })
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// cleanup checks that a process that exited left nothing behind, kills
// one still running with its group, and fails the test if anything of the
// group is alive afterwards.
func (p *proc) cleanup(t *testing.T) {
	pgid := p.pid()
	select {
	case <-p.exited:
		// Reaped: the group is only ours while it has members.
		if left := waitGroupGone(pgid, 5*time.Second); len(left) > 0 {
			t.Errorf("%s exited and left processes of its group %d behind: %s", p.name, pgid, strings.Join(left, "; "))
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	default:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("%s (pid %d) still running 10s after SIGKILL", p.name, pgid)
		}
		if left := waitGroupGone(pgid, 5*time.Second); len(left) > 0 {
			t.Errorf("processes of %s (process group %d) alive after SIGKILL: %s", p.name, pgid, strings.Join(left, "; "))
		}
	}
	select {
	case <-p.copied:
	case <-time.After(5 * time.Second):
		t.Errorf("the output of %s (pid %d) is still held open by a process outside its group", p.name, pgid)
	}
	if strings.Contains(p.stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("%s (pid %d) reported a data race (FULCRUM_E2E_RACE=1)", p.name, pgid)
	}
	if t.Failed() {
		t.Logf("%s (pid %d) stdout:\n%s", p.name, pgid, p.stdout)
		t.Logf("%s (pid %d) stderr:\n%s", p.name, pgid, p.stderr)
	}
}

// waitGroupGone waits up to d for process group pgid to have no live
// member and returns the members still alive then.
func waitGroupGone(pgid int, d time.Duration) []string {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return left
		}
	}
}

// groupMembers lists the live (not zombie) processes of process group
// pgid, as "pid (command)".
func groupMembers(pgid int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		// After "pid (comm)": state ppid pgrp ...
		fields := strings.Fields(s[end+1:])
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(fields[2]); err == nil && g == pgid {
			out = append(out, s[:end+1])
		}
	}
	return out
}

// signal sends sig to the process (not its group).
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signalling %s: %v", p.name, err)
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
	p.waitCopied(t)
	if p.err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", p.name, p.err)
	return 0
}

// waitCopied waits a little for the output of an exited process to be
// copied; a child of it that keeps the output open fails the test.
func (p *proc) waitCopied(t *testing.T) {
	t.Helper()
	select {
	case <-p.copied:
	case <-time.After(5 * time.Second):
		t.Errorf("%s (pid %d) exited but its output is still held open: %s", p.name, p.pid(), strings.Join(groupMembers(p.pid()), "; "))
	}
}

// kill9 kills the process with SIGKILL and waits until it is gone.
func (p *proc) kill9(ctx context.Context, t *testing.T) {
	t.Helper()
	p.signal(t, syscall.SIGKILL)
	if code := p.exit(ctx, t); code != -1 {
		t.Fatalf("%s exited with %d after SIGKILL, want death by signal", p.name, code)
	}
}

// waitOutput waits until the process has written a match of re to o and
// returns the match's submatches. It fails the test when the process exits
// or ctx ends first.
func (p *proc) waitOutput(ctx context.Context, t *testing.T, o *output, re *regexp.Regexp) []string {
	t.Helper()
	for {
		s, changed := o.snapshot()
		if m := re.FindStringSubmatch(s); m != nil {
			return m
		}
		select {
		case <-changed:
		case <-p.exited:
			p.waitCopied(t)
			if m := re.FindStringSubmatch(o.String()); m != nil {
				return m
			}
			t.Fatalf("%s exited (%v) without writing %q", p.name, p.err, re)
		case <-ctx.Done():
			t.Fatalf("%s did not write %q: %v", p.name, re, ctx.Err())
		}
	}
}

// run runs the fulcrum binary to completion and returns its exit code,
// stdout and stderr.
func run(ctx context.Context, t *testing.T, name string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startProc(t, name, args...)
	code = p.exit(ctx, t)
	return code, p.stdout.String(), p.stderr.String()
}

// needTool returns the path of an external tool. A missing tool fails the
// test when CI=true and skips it otherwise.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required (CI=true) but not installed: %v; scripts/test.sh installs it", name, err)
	}
	t.Skipf("%s is not installed (%v); scripts/test.sh installs it", name, err)
	return ""
}

// runTool runs an external tool and returns its stdout; a non-zero exit
// fails the test.
func runTool(ctx context.Context, t *testing.T, path string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(path), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// writeConfig writes a config file from a format string and returns its
// path.
func writeConfig(t *testing.T, format string, args ...any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fulcrum.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(format, args...)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testContext returns a context ending after d or when the test ends.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
