// Package proctest is a test helper for starting real processes: each runs
// in a process group of its own, its stdout and stderr are collected so
// that a test can wait for a line matching a regular expression, and when
// the test ends the whole group is killed and checked gone. It takes a
// testing.TB and reports failures through it, so it is for tests only.
//
// A typical use starts a server and waits for the line that gives its
// address:
//
//	p := proctest.Start(t, "fulcrum serve", proctest.Options{}, bin, "serve", "--config", path)
//	m := p.WaitOutput(ctx, t, p.Stderr, regexp.MustCompile(`admin=(\S+)`))
//	admin := m[1]
//
// When the test ends, a process that exited on its own must have left
// nothing of its group alive and no one holding its output; one still
// running is killed with SIGKILL together with its group. A process that
// wrote "WARNING: DATA RACE" to stderr (a binary built with -race) fails
// the test. On failure its output is logged.
//
// Linux only: it reads /proc and uses Pdeathsig.
package proctest
