//go:build linux

package proctest

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that records failures and logs instead of
// reporting them, and runs its cleanups when told, so that tests can check
// what the helper reports. Its Fatalf ends the calling goroutine: call
// what may fail through run.
type recorder struct {
	testing.TB // the real test, for what is not overridden
	mu         sync.Mutex
	failed     bool
	errors     []string
	logs       []string
	cleanups   []func()
}

func newRecorder(t *testing.T) *recorder { return &recorder{TB: t} }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// run calls f on a goroutine of its own and reports whether it returned
// (false: it called Fatalf).
func (r *recorder) run(f func()) bool {
	returned := make(chan bool, 1)
	go func() {
		ok := false
		defer func() { returned <- ok }()
		f()
		ok = true
	}()
	return <-returned
}

// end runs the cleanups, the last registered first, and returns the
// failures reported.
func (r *recorder) end() []string {
	r.mu.Lock()
	cs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		r.run(cs[i])
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errors
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// begin starts sh -c script under a fresh recorder, with a context for
// the test's waits.
func begin(t *testing.T, opts Options, script string) (context.Context, *recorder, *Proc) {
	t.Helper()
	r := newRecorder(t)
	return testContext(t, 30*time.Second), r, startSh(t, r, opts, script)
}

// startSh starts sh -c script under r, failing t if that fails.
func startSh(t *testing.T, r *recorder, opts Options, script string) *Proc {
	t.Helper()
	var p *Proc
	if !r.run(func() { p = Start(r, "test sh", opts, "sh", "-c", script) }) {
		t.Fatalf("Start: %v", r.errors)
	}
	return p
}

// A process's stdout and stderr are collected, it can be waited for and
// talked to on stdin, gets Options.Env and exits with its code; an exited
// process that left nothing behind passes the cleanup.
func TestStartWaitExit(t *testing.T) {
	t.Parallel()
	ctx, r, p := begin(t, Options{Env: []string{"PROCTEST_WORD=hello"}, Stdin: true}, `echo "ready $PROCTEST_WORD"; echo "on stderr" >&2; read line; echo "got $line"; exit 3`)
	var m []string
	if !r.run(func() { m = p.WaitOutput(ctx, r, p.Stdout, regexp.MustCompile(`ready (\w+)`)) }) {
		t.Fatalf("WaitOutput: %v", r.errors)
	}
	if m[1] != "hello" {
		t.Errorf("submatch %q, want the environment's %q", m[1], "hello")
	}
	if !r.run(func() { p.WaitOutput(ctx, r, p.Stderr, regexp.MustCompile(`on stderr`)) }) {
		t.Fatalf("WaitOutput on stderr: %v", r.errors)
	}
	if _, err := fmt.Fprintln(p.Stdin, "line one"); err != nil {
		t.Fatal(err)
	}
	code := 0
	if !r.run(func() { code = p.Exit(ctx, r) }) {
		t.Fatalf("Exit: %v", r.errors)
	}
	if code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	if got := p.Stdout.String(); got != "ready hello\ngot line one\n" {
		t.Errorf("stdout %q", got)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Exit")
	}
	if errs := r.end(); len(errs) > 0 {
		t.Errorf("cleanup of a process that exited cleanly failed: %v", errs)
	}
}

// The cleanup kills a process still running together with the children
// in its group.
func TestCleanupKillsGroup(t *testing.T) {
	t.Parallel()
	ctx, r, p := begin(t, Options{}, `sleep 300 & echo "child $!"; wait`)
	var m []string
	if !r.run(func() { m = p.WaitOutput(ctx, r, p.Stdout, regexp.MustCompile(`child (\d+)`)) }) {
		t.Fatalf("WaitOutput: %v", r.errors)
	}
	child, _ := strconv.Atoi(m[1])
	pgid := p.Pid()
	if got := groupMembers(pgid); len(got) != 2 {
		t.Fatalf("group %d: %v, want sh and sleep", pgid, got)
	}
	if errs := r.end(); len(errs) > 0 {
		t.Errorf("cleanup failed: %v", errs)
	}
	if left := groupMembers(pgid); len(left) > 0 {
		t.Errorf("group %d alive after the cleanup: %v", pgid, left)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after the cleanup")
	}
	t.Logf("sh %d and its child %d killed", pgid, child)
}

// A process that exits leaving a child in its group fails the test, and
// the child is killed.
func TestCleanupReportsLeftovers(t *testing.T) {
	t.Parallel()
	ctx, r, p := begin(t, Options{}, `sleep 300 >/dev/null 2>&1 & echo "child $!"`)
	if !r.run(func() { p.Exit(ctx, r) }) {
		t.Fatalf("Exit: %v", r.errors)
	}
	pgid := p.Pid()
	errs := r.end()
	if len(errs) != 1 || !strings.Contains(errs[0], "test sh exited and left processes of its group") || !strings.Contains(errs[0], "(sleep)") {
		t.Errorf("cleanup reported %q, want the sleep left behind", errs)
	}
	if left := waitGroupGone(pgid, 10*time.Second); len(left) > 0 {
		t.Errorf("group %d alive after the cleanup: %v", pgid, left)
	}
	if !strings.Contains(strings.Join(r.logs, "\n"), "child ") {
		t.Errorf("the failed test's log lacks the process's stdout: %q", r.logs)
	}
}

// A wait that times out fails the test with a message naming the process,
// the pattern and what the process wrote.
func TestWaitOutputTimeout(t *testing.T) {
	t.Parallel()
	ctx, r, p := begin(t, Options{}, `echo "hello from sh"; exec sleep 300`)
	if !r.run(func() { p.WaitOutput(ctx, r, p.Stdout, regexp.MustCompile(`hello`)) }) {
		t.Fatalf("WaitOutput: %v", r.errors)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if r.run(func() { p.WaitOutput(short, r, p.Stdout, regexp.MustCompile(`never written`)) }) {
		t.Fatal("WaitOutput returned for a line never written")
	}
	msg := strings.Join(r.errors, "\n")
	for _, want := range []string{"test sh did not write", `"never written"`, "stdout", "context deadline exceeded", "hello from sh"} {
		if !strings.Contains(msg, want) {
			t.Errorf("timeout message %q lacks %q", msg, want)
		}
	}
	r.end()
	if left := groupMembers(p.Pid()); len(left) > 0 {
		t.Errorf("group alive after the cleanup: %v", left)
	}
}

// A process that exits without writing what is waited for fails the wait
// at once, with its output.
func TestWaitOutputExited(t *testing.T) {
	t.Parallel()
	ctx, r, p := begin(t, Options{}, `echo "something else" >&2; exit 1`)
	if r.run(func() { p.WaitOutput(ctx, r, p.Stderr, regexp.MustCompile(`listening`)) }) {
		t.Fatal("WaitOutput returned for a line never written")
	}
	msg := strings.Join(r.errors, "\n")
	for _, want := range []string{"test sh exited (exit status 1) without writing", "stderr", "something else"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if ctx.Err() != nil {
		t.Errorf("WaitOutput waited for the context: %v", ctx.Err())
	}
	r.end()
}

// Kill9 kills the process and reports death by signal; the cleanup then
// has nothing left to do.
func TestKill9(t *testing.T) {
	t.Parallel()
	ctx, r, p := begin(t, Options{}, `exec sleep 300`)
	if !r.run(func() { p.Kill9(ctx, r) }) {
		t.Fatalf("Kill9: %v", r.errors)
	}
	if errs := r.end(); len(errs) > 0 {
		t.Errorf("cleanup failed: %v", errs)
	}
}

// A data race reported on stderr fails the test.
func TestDataRaceFails(t *testing.T) {
	t.Parallel()
	ctx, r, p := begin(t, Options{}, `echo "WARNING: DATA RACE" >&2`)
	if !r.run(func() { p.Exit(ctx, r) }) {
		t.Fatalf("Exit: %v", r.errors)
	}
	errs := r.end()
	if len(errs) != 1 || !strings.Contains(errs[0], "test sh (pid ") || !strings.Contains(errs[0], "reported a data race") {
		t.Errorf("cleanup reported %q, want the data race", errs)
	}
}

// A command that cannot start fails the test naming it.
func TestStartFails(t *testing.T) {
	t.Parallel()
	r := newRecorder(t)
	if r.run(func() { Start(r, "missing", Options{}, "/nonexistent/proctest-binary", "-x") }) {
		t.Fatal("Start returned for a missing binary")
	}
	if msg := strings.Join(r.errors, "\n"); !strings.Contains(msg, "starting missing (/nonexistent/proctest-binary -x)") {
		t.Errorf("message %q does not name the command", msg)
	}
	if errs := r.end(); len(errs) != 1 {
		t.Errorf("cleanups ran for a process never started: %v", errs)
	}
}
