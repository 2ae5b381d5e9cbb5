package backend_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// groupDoor answers every Request LOCATION_FORWARD to ref and counts them:
// the group's front door as clients see it.
type groupDoor struct {
	ln       net.Listener
	ref      atomic.Pointer[ior.IOR]
	requests atomic.Int64
}

func startGroupDoor(t *testing.T) *groupDoor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &groupDoor{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				r, w := wire.NewReader(nc, giop.Limits{}), wire.NewWriter(nc)
				for {
					b, err := r.Next()
					if err != nil {
						return
					}
					m, err := giop.DecodeMessage(b)
					if err != nil {
						return
					}
					if req, ok := m.(*giop.Request); ok {
						d.requests.Add(1)
						rep := giop.ReplyTo(req, giop.StatusLocationForward)
						rep.SetForward(*d.ref.Load(), false)
						_ = w.Write(rep)
					}
				}
			}()
		}
	}()
	return d
}

// pull is the balancer's pull of the monitor's report, carrying adv.
func pull(t *testing.T, mon *monitor.Monitor, adv *protocol.Advisory) protocol.Report {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/fulcrum/report", nil)
	if adv != nil {
		b, _ := json.Marshal(adv)
		req.Header.Set(protocol.HeaderAdvisory, string(b))
	}
	rec := httptest.NewRecorder()
	mon.PullHandler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("pull: %d %s", rec.Code, rec.Body)
	}
	var rep protocol.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// The built-in monitor counts each client connection's calls, and under a
// high advisory naming a client answers its next call LOCATION_FORWARD to
// the group's reference instead of running it, once per epoch; the client
// ORB goes back through the front door and on.
func TestGIOPPrimeMonitorSendsClientsBack(t *testing.T) {
	t.Parallel()
	door := startGroupDoor(t)
	mon, err := monitor.New(monitor.Options{
		Group: "prime", Token: "replica-token", Mode: protocol.MonitorPull, PullURL: "http://127.0.0.1:1/fulcrum/report",
		FrontDoor: "corbaloc:iiop:1.2@" + door.ln.Addr().String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, ref := startGIOPPrime(t, backend.GIOPPrimeOptions{Monitor: mon, Group: "prime"})
	door.ref.Store(&ref)

	o := newORB(t, orb.Options{})
	obj, err := o.Resolve("corbaloc:iiop:1.2@" + door.ln.Addr().String() + "/prime")
	if err != nil {
		t.Fatal(err)
	}
	prime := orb.Prime{Object: obj}
	ctx := testCtx(t)
	for range 10 {
		if _, _, err := prime.IsPrime(ctx, 101); err != nil {
			t.Fatal(err)
		}
	}
	if n := door.requests.Load(); n != 1 {
		t.Fatalf("front door saw %d requests for 10 calls, want 1", n)
	}
	rep := pull(t, mon, nil)
	if len(rep.Clients) != 1 {
		t.Fatalf("report lists clients %+v, want the one client connection", rep.Clients)
	}
	client := rep.Clients[0].ID
	if _, _, err := net.SplitHostPort(client); err != nil {
		t.Errorf("client id %q is not the connection's remote address: %v", client, err)
	}

	pull(t, mon, &protocol.Advisory{Advisory: protocol.High, Shed: 1, Epoch: 7, Clients: []string{client}})
	ok, res, err := prime.IsPrime(ctx, 101)
	if err != nil || !ok {
		t.Fatalf("call under the advisory: %v, %v", ok, err)
	}
	if res.Forwards != 2 || door.requests.Load() != 2 {
		t.Errorf("call under the advisory followed %d forwards (want 2: back to the group, on to a replica); front door saw %d requests (want 2)",
			res.Forwards, door.requests.Load())
	}
	if st := mon.Stats(); st.Rebinds != 1 {
		t.Errorf("monitor counted %d rebinds, want 1", st.Rebinds)
	}
	// Once per epoch: later calls run.
	for range 5 {
		if _, res, err := prime.IsPrime(ctx, 101); err != nil || res.Forwards != 0 {
			t.Fatalf("call after the send-back: forwards %v, %v", res, err)
		}
	}
	if n := door.requests.Load(); n != 2 {
		t.Errorf("front door saw %d requests, want 2", n)
	}
}
