package balancer_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestDrainSendsBoundClientsBack drains the replica a client of the real
// client library is bound to: its real monitor learns the drain advisory
// from its next report, sends the client back on its next call instead of
// running it, and the front door binds the client to the other replica,
// counting a rebind there.
// In a synctest bubble (bubble_test.go).
func TestDrainSendsBoundClientsBack(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testDrainSendsBoundClientsBack)
}

func testDrainSendsBoundClientsBack(t *testing.T) {
	n := memnet.New()
	e := newEnv(t, envOptions{net: n, admin: true})
	st := e.mustPutGroup(protocol.Group{Name: "dr", Strategy: strategy.RoundRobinName, ReportInterval: ms(20)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	type replica struct {
		id     string
		mon    *monitor.Monitor
		served atomic.Int64
	}
	reps := map[string]*replica{}
	var names [2]string
	for i := range names {
		r := &replica{}
		srv := newMemUnstartedReplica(t, n)
		mon, err := monitor.New(monitor.Options{Admin: e.adminURL, Group: "dr", Address: srv.URL(), HTTPClient: memAdminClient(t, n), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		r.mon = mon
		name := fmt.Sprintf("replica-%d", i)
		srv.start(mon.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			r.served.Add(1)
			io.WriteString(w, name)
		})))
		if err := mon.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeMonitor(t, mon) })
		reg, err := mon.WaitRegistered(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.id = reg.ID
		reps[reg.ID] = r
		names[i] = reg.ID
	}

	base := &http.Transport{Proxy: nil, DialContext: n.Dial}
	t.Cleanup(base.CloseIdleConnections)
	tr := client.NewTransport(client.Options{Base: base, Logger: quiet})
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	call := func() {
		t.Helper()
		if err := callOnce(ctx, hc, st.Advertise+"/work"); err != nil {
			t.Fatal(err)
		}
	}
	call()
	first, ok := tr.Binding(st.Advertise)
	if !ok || reps[first.Replica] == nil {
		t.Fatalf("client binding %+v after its first call, want one of %v", first, names)
	}
	from := reps[first.Replica]
	var to *replica
	for id, r := range reps {
		if id != from.id {
			to = r
		}
	}

	if err := e.b.Drain("dr", from.id); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error {
		if adv := from.mon.Advisory(); adv.Advisory != protocol.Drain {
			return fmt.Errorf("monitor of the drained replica obeys %+v", adv)
		}
		return nil
	})
	call()
	if b, _ := tr.Binding(st.Advertise); b.Replica != to.id {
		t.Errorf("client bound to %s after the drain, want %s", b.Replica, to.id)
	}
	if from.served.Load() != 1 || to.served.Load() != 1 {
		t.Errorf("calls run: drained %d, other %d; want 1 and 1 (the sent-back call ran once, elsewhere)", from.served.Load(), to.served.Load())
	}
	if got := replicaOf(t, e.mustGroup("dr"), to.id).Counters; got.Bindings != 1 || got.Rebinds != 1 {
		t.Errorf("counters of the replica the client moved to: %+v; want 1 binding, counted as a rebind", got)
	}
}
