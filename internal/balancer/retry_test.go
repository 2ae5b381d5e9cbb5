package balancer_test

import (
	"cmp"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestGroupRetrySetting: a group's retry setting reaches its front door.
// One of two replicas dies with every GET in flight (the connection closed,
// no response byte): under the default (unsent) the call that reached it
// fails, under idempotent it is answered by the other replica.
func TestGroupRetrySetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retry    string
		replayed bool
	}{
		{"", false},
		{protocol.RetryUnsent, false},
		{protocol.RetryIdempotent, true},
	} {
		t.Run("retry="+tc.retry, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{})
			var died atomic.Int64
			dying := newReplica(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				died.Add(1)
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
				}
			}))
			good := newReplica(t, named("good"))
			gs := e.mustPutGroup(protocol.Group{
				Name: "retry", Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName, ReportInterval: ms(20),
				Health: protocol.Health{Passive: protocol.Passive{ConsecutiveFailures: -1}},
				Retry:  tc.retry,
			})
			if want := cmp.Or(tc.retry, protocol.RetryUnsent); gs.Retry != want {
				t.Errorf("status retry = %q, want %q", gs.Retry, want)
			}
			e.mustRegister("retry", dying.URL)
			e.mustRegister("retry", good.URL)
			c := httpClient(t)
			failed := 0
			// Calls until two reached the dying replica first.
			for i := 0; died.Load() < 2; i++ {
				if i == 50 {
					t.Fatalf("the dying replica got %d of 50 calls", died.Load())
				}
				switch a := get(t, c, gs.Advertise+"/work"); a.status {
				case http.StatusOK:
				case http.StatusBadGateway:
					failed++
				default:
					t.Fatalf("answer %d %s, want 200 or 502", a.status, a.body)
				}
			}
			want := int(died.Load())
			if tc.replayed {
				want = 0
			}
			if failed != want {
				t.Errorf("%d calls failed with %d reaching the dying replica first, want %d", failed, died.Load(), want)
			}
		})
	}
}
