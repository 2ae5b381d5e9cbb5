package monitor_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// lockedBuffer is a log sink safe for the monitor's goroutine and the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// joinTokenBalancer runs a real balancer with an admin token behind the
// real admin API, with group "g" that takes join token "join". It returns
// the API's URL and a count of registration attempts.
func joinTokenBalancer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewUnstartedServer(nil)
	b, err := balancer.New(balancer.Options{Store: st, Logger: discardLogger(), AdminURL: "http://" + srv.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	if _, _, err := b.PutGroup(protocol.Group{Name: "g", FrontDoor: "127.0.0.1:0", JoinToken: "join"}); err != nil {
		t.Fatal(err)
	}
	attempts := new(atomic.Int64)
	h := api.New(b, api.Options{AdminToken: "admin", Logger: discardLogger()})
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/replicas") {
			attempts.Add(1)
		}
		h.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, attempts
}

// TestMissingJoinTokenGivesUp: a monitor without the join token its group
// requires logs an error naming the missing join token at the first
// refusal, and gives up after RegisterAttempts refusals (default 5):
// Failed closes and Err wraps ErrGaveUp and the 401.
func TestMissingJoinTokenGivesUp(t *testing.T) {
	t.Parallel()
	admin, attempts := joinTokenBalancer(t)
	var logs lockedBuffer
	clock := newFakeClock()
	mon, err := monitor.New(monitor.Options{
		Admin: admin, Group: "g", Address: "http://127.0.0.1:9001",
		Clock: clock, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mon.Close(context.Background()) })
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}

	// The first refusal is an error at once, naming what is missing.
	clock.Advance(clock.waitArmed(t))
	if out := logs.String(); !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "no join token given") || !strings.Contains(out, "group g needs one") {
		t.Errorf("after the first refusal, log:\n%s", out)
	}
	for range monitor.DefaultRegisterAttempts - 2 {
		clock.Advance(clock.waitArmed(t))
		if mon.Err() != nil {
			t.Fatalf("gave up after %d attempts: %v", attempts.Load(), mon.Err())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-mon.Failed():
	case <-ctx.Done():
		t.Fatalf("still trying after %d refused attempts", attempts.Load())
	}
	if n := attempts.Load(); n != monitor.DefaultRegisterAttempts {
		t.Errorf("%d registration attempts, want %d", n, monitor.DefaultRegisterAttempts)
	}
	var ae *monitor.APIError
	if err := mon.Err(); !errors.Is(err, monitor.ErrGaveUp) || !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Errorf("Err() = %v, want ErrGaveUp wrapping a 401", err)
	}
	if _, err := mon.WaitRegistered(ctx); !errors.Is(err, monitor.ErrGaveUp) {
		t.Errorf("WaitRegistered = %v, want ErrGaveUp", err)
	}
	if out := logs.String(); strings.Count(out, "no join token given") != 1 || !strings.Contains(out, "giving up registering") {
		t.Errorf("log: want the missing token named once, then giving up:\n%s", out)
	}
}

// TestRetryForeverKeepsTrying: with RegisterAttempts < 0 a monitor whose
// join token is refused keeps trying past the default bound and does not
// fail.
func TestRetryForeverKeepsTrying(t *testing.T) {
	t.Parallel()
	admin, attempts := joinTokenBalancer(t)
	clock := newFakeClock()
	mon, err := monitor.New(monitor.Options{
		Admin: admin, Group: "g", Address: "http://127.0.0.1:9001", JoinToken: "wrong",
		Clock: clock, Logger: discardLogger(), RegisterAttempts: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mon.Close(context.Background()) })
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	for range 2 * monitor.DefaultRegisterAttempts {
		clock.Advance(clock.waitArmed(t))
	}
	clock.waitArmed(t) // armed again: still trying
	if n := attempts.Load(); n <= 2*monitor.DefaultRegisterAttempts {
		t.Errorf("%d attempts, want more than %d", n, 2*monitor.DefaultRegisterAttempts)
	}
	if err := mon.Err(); err != nil {
		t.Errorf("Err() = %v with RegisterAttempts -1", err)
	}
}

// TestUnavailableBalancerIsRetriedPastTheBound: failures that are not
// refusals (a balancer still starting) do not count against
// RegisterAttempts.
func TestUnavailableBalancerIsRetriedPastTheBound(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	admin.regFailures = 2 * monitor.DefaultRegisterAttempts
	rp := newReplica(t, admin, nil)
	if err := rp.mon.Start(); err != nil {
		t.Fatal(err)
	}
	for range 2 * monitor.DefaultRegisterAttempts {
		rp.clock.Advance(rp.clock.waitArmed(t))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := rp.mon.WaitRegistered(ctx); err != nil {
		t.Fatalf("WaitRegistered after %d unavailable answers: %v", 2*monitor.DefaultRegisterAttempts, err)
	}
}
