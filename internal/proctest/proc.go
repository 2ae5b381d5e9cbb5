//go:build linux

package proctest

import (
	"context"
	"errors"
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

// Grace periods of the checks at the end of a test.
const (
	killWait   = 10 * time.Second // for a process to die after SIGKILL
	groupWait  = 5 * time.Second  // for the rest of its group to go
	copiedWait = 5 * time.Second  // for its output to be closed once it is gone
)

// Proc is a process started by a test, in a process group of its own.
type Proc struct {
	Name   string         // names the process in messages
	Stdin  io.WriteCloser // nil unless started with Options.Stdin
	Stdout *Output
	Stderr *Output

	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited
	copied chan struct{} // closed once its stdout and stderr are closed and copied
	done   chan struct{} // closed once both exited and copied are
	err    error         // cmd.Wait's error; read after exited
}

// Options are the settings of Start beyond the command line.
type Options struct {
	Env   []string // added to the test's environment
	Stdin bool     // give the process a stdin pipe (Proc.Stdin)
	// Wrap, when set, rewrites the command before it starts (a testbed
	// replica's Wrap, to run it in the replica's namespace and cgroup).
	// It must keep the program's pid (exec, not fork).
	Wrap func(*exec.Cmd) error
}

// Start starts path with args as a process named name (for messages) in a
// process group of its own; a start that fails fails the test. When the
// test ends, the process is checked and killed as the package comment
// says.
func Start(t testing.TB, name string, opts Options, path string, args ...string) *Proc {
	t.Helper()
	p := &Proc{
		Name:   name,
		Stdout: newOutput("stdout"),
		Stderr: newOutput("stderr"),
		exited: make(chan struct{}),
		copied: make(chan struct{}),
		done:   make(chan struct{}),
	}
	p.cmd = exec.Command(path, args...)
	if len(opts.Env) > 0 {
		p.cmd.Env = append(os.Environ(), opts.Env...)
	}
	if opts.Stdin {
		w, err := p.cmd.StdinPipe()
		if err != nil {
			t.Fatalf("starting %s: stdin: %v", name, err)
		}
		p.Stdin = w
	}
	// Pipes of our own rather than exec's, so that Wait returns when the
	// process exits even if a child of it still holds its output.
	var copies sync.WaitGroup
	for _, o := range []*Output{p.Stdout, p.Stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatalf("starting %s: %v", name, err)
		}
		if o == p.Stdout {
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
	if opts.Wrap != nil {
		if err := opts.Wrap(p.cmd); err != nil {
			t.Fatalf("starting %s: %v", name, err)
		}
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s (%s %s): %v", name, path, strings.Join(args, " "), err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
		<-p.copied
		close(p.done)
	}()
	t.Cleanup(func() { p.cleanup(t) })
	return p
}

// Pid returns the process's id, which is also its process group's.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done returns a channel closed once the process has exited and all its
// output is copied.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err returns the error of waiting for the process (nil for exit status
// 0). Only valid after Done is closed.
func (p *Proc) Err() error { return p.err }

// cleanup checks that a process that exited left nothing behind, kills
// one still running with its group, and fails the test if anything of the
// group is alive afterwards.
func (p *Proc) cleanup(t testing.TB) {
	if p.Stdin != nil {
		_ = p.Stdin.Close()
	}
	pgid := p.Pid()
	select {
	case <-p.exited:
		// Reaped: the group is only ours while it has members.
		if left := waitGroupGone(pgid, groupWait); len(left) > 0 {
			t.Errorf("%s exited and left processes of its group %d behind: %s", p.Name, pgid, strings.Join(left, "; "))
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	default:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-p.exited:
		case <-time.After(killWait):
			t.Errorf("%s (pid %d) still running %v after SIGKILL", p.Name, pgid, killWait)
		}
		if left := waitGroupGone(pgid, groupWait); len(left) > 0 {
			t.Errorf("processes of %s (process group %d) alive after SIGKILL: %s", p.Name, pgid, strings.Join(left, "; "))
		}
	}
	select {
	case <-p.copied:
	case <-time.After(copiedWait):
		t.Errorf("the output of %s (pid %d) is still held open by a process outside its group", p.Name, pgid)
	}
	if strings.Contains(p.Stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("%s (pid %d) reported a data race", p.Name, pgid)
	}
	if t.Failed() {
		t.Logf("%s (pid %d) stdout:\n%s", p.Name, pgid, p.Stdout)
		t.Logf("%s (pid %d) stderr:\n%s", p.Name, pgid, p.Stderr)
	}
}

// Signal sends sig to the process (not its group).
func (p *Proc) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signalling %s: %v", p.Name, err)
	}
}

// Exit waits for the process to exit and returns its exit code (-1 when
// killed by a signal). It fails the test when ctx ends first.
func (p *Proc) Exit(ctx context.Context, t testing.TB) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-ctx.Done():
		t.Fatalf("%s (pid %d) did not exit: %v", p.Name, p.Pid(), ctx.Err())
	}
	p.waitCopied(t)
	if p.err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", p.Name, p.err)
	return 0
}

// waitCopied waits a little for the output of an exited process to be
// copied (and so Done to be closed); a child of it that keeps the output
// open fails the test.
func (p *Proc) waitCopied(t testing.TB) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(copiedWait):
		t.Errorf("%s (pid %d) exited but its output is still held open: %s", p.Name, p.Pid(), strings.Join(groupMembers(p.Pid()), "; "))
	}
}

// Kill9 kills the process (not its group) with SIGKILL and waits until it
// is gone.
func (p *Proc) Kill9(ctx context.Context, t testing.TB) {
	t.Helper()
	p.Signal(t, syscall.SIGKILL)
	if code := p.Exit(ctx, t); code != -1 {
		t.Fatalf("%s exited with %d after SIGKILL, want death by signal", p.Name, code)
	}
}

// WaitOutput waits until the process has written a match of re to o (its
// Stdout or Stderr) and returns the match's submatches. It fails the test
// when the process exits or ctx ends first, with what it wrote to o.
func (p *Proc) WaitOutput(ctx context.Context, t testing.TB, o *Output, re *regexp.Regexp) []string {
	t.Helper()
	for {
		s, changed := o.Snapshot()
		if m := re.FindStringSubmatch(s); m != nil {
			return m
		}
		select {
		case <-changed:
		case <-p.exited:
			p.waitCopied(t)
			s := o.String()
			if m := re.FindStringSubmatch(s); m != nil {
				return m
			}
			t.Fatalf("%s exited (%v) without writing %q to %s; it wrote:\n%s", p.Name, p.err, re, o.name, s)
		case <-ctx.Done():
			t.Fatalf("%s did not write %q to %s: %v; it wrote:\n%s", p.Name, re, o.name, ctx.Err(), o)
		}
	}
}
