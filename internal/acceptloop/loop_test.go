package acceptloop_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/acceptloop"
)

// script is a listener that returns its errors in turn, then a connection
// for each nil, then net.ErrClosed once closed.
type script struct {
	mu     sync.Mutex
	steps  []error
	closed chan struct{}
}

func newScript(steps ...error) *script { return &script{steps: steps, closed: make(chan struct{})} }

func (s *script) Accept() (net.Conn, error) {
	s.mu.Lock()
	if len(s.steps) > 0 {
		err := s.steps[0]
		s.steps = s.steps[1:]
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		a, b := net.Pipe()
		b.Close()
		return a, nil
	}
	s.mu.Unlock()
	<-s.closed
	return nil, fmt.Errorf("accept: %w", net.ErrClosed)
}

func (s *script) Close() error   { close(s.closed); return nil }
func (s *script) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

func opErr(errno syscall.Errno) error {
	return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
}

// Temporary errors are retried after 5 ms, 10 ms, ... up to 1 s, the
// back-off restarts after a connection is accepted, one warning is logged
// per episode, and the loop returns when the listener is closed.
func TestServeBacksOffOnTemporaryErrors(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var steps []error
		for range 10 {
			steps = append(steps, opErr(syscall.EMFILE))
		}
		steps = append(steps, nil, opErr(syscall.ECONNABORTED), opErr(syscall.ENFILE), nil)
		ln := newScript(steps...)
		var logs bytes.Buffer
		var waits []time.Duration
		after := func(d time.Duration) <-chan time.Time {
			waits = append(waits, d)
			return time.After(d)
		}
		accepted := make(chan struct{}, 8)
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			done <- acceptloop.Serve(ln, func(nc net.Conn) error {
				nc.Close()
				accepted <- struct{}{}
				return nil
			}, acceptloop.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Name: "test", After: after})
		}()
		<-accepted
		<-accepted
		synctest.Wait()
		ms := time.Millisecond
		want := []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second, 5 * ms, 10 * ms}
		if fmt.Sprint(waits) != fmt.Sprint(want) {
			t.Errorf("back-offs %v, want %v", waits, want)
		}
		var sum time.Duration
		for _, d := range want {
			sum += d
		}
		if took := time.Since(start); took != sum {
			t.Errorf("served again after %v, want %v", took, sum)
		}
		if n := strings.Count(logs.String(), "accept failed"); n != 2 {
			t.Errorf("%d warnings for 2 episodes:\n%s", n, logs.String())
		}
		ln.Close()
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve returned %v after Close, want net.ErrClosed", err)
		}
	})
}

// A permanent error ends the loop at once, and so does the handler's.
func TestServeReturnsPermanentErrors(t *testing.T) {
	t.Parallel()
	permanent := opErr(syscall.EINVAL)
	if err := acceptloop.Serve(newScript(permanent), func(net.Conn) error { return nil }, acceptloop.Options{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Serve = %v, want the EINVAL it got", err)
	}
	stop := errors.New("stop")
	if err := acceptloop.Serve(newScript(nil), func(nc net.Conn) error { nc.Close(); return stop }, acceptloop.Options{}); err != stop {
		t.Errorf("Serve = %v, want the handler's error", err)
	}
}

func TestTemporary(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"EMFILE", opErr(syscall.EMFILE), true},
		{"ENFILE", opErr(syscall.ENFILE), true},
		{"ECONNABORTED", opErr(syscall.ECONNABORTED), true},
		{"ENOBUFS", opErr(syscall.ENOBUFS), true},
		{"EINTR", opErr(syscall.EINTR), true},
		{"timeout", &net.OpError{Op: "accept", Err: os.ErrDeadlineExceeded}, true},
		{"closed", fmt.Errorf("accept: %w", net.ErrClosed), false},
		{"EINVAL", opErr(syscall.EINVAL), false},
		{"EBADF", opErr(syscall.EBADF), false},
		{"plain", errors.New("broken"), false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := acceptloop.Temporary(c.err); got != c.want {
				t.Errorf("Temporary(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}
