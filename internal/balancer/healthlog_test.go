package balancer_test

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestHealthChangeLoggedOnce: a replica whose probes fail, then pass, is
// logged once per change, as "replica health changed" at warn (as
// docs/operations.md says), not once more by the prober.
func TestHealthChangeLoggedOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		logs := newLogCapture()
		e := newEnv(t, envOptions{net: n, logger: slog.New(logs)})
		var healthy atomic.Bool
		healthy.Store(true)
		url := healthyReplica(t, n, "a", &healthy)
		e.mustPutGroup(protocol.Group{
			Name: "hc", Strategy: strategy.RoundRobinName, ReportInterval: ms(20),
			Health: protocol.Health{Path: "/healthz", Interval: ms(20), Timeout: ms(20), Rise: 2, Fall: 2},
		})
		events := e.subscribe("hc")
		a := e.mustRegister("hc", url)

		healthy.Store(false)
		waitEvent(t, events, 5*time.Second, membership(stateIs(a.ID, protocol.StateDown)))
		healthy.Store(true)
		waitEvent(t, events, 5*time.Second, membership(stateIs(a.ID, protocol.StateActive)))

		got := logs.matching(func(l logLine) bool {
			return l.attrs["replica"] == a.ID && strings.Contains(l.msg, "health")
		})
		if len(got) != 2 {
			t.Fatalf("health log lines for %s: %+v; want 2 (down, then up)", a.ID, got)
		}
		for i, want := range []string{"down", "up"} {
			if l := got[i]; l.msg != "replica health changed" || l.level != slog.LevelWarn || l.attrs["state"] != want || l.attrs["group"] != "hc" {
				t.Errorf("line %d: %+v; want warn \"replica health changed\" group=hc state=%s", i, l, want)
			}
		}
	})
}
