package client_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The client and the monitor speak the same protocol: a replica whose
// monitor holds a high advisory naming the client sends it back once, and
// the call runs on the replica the front door picks next, exactly once.
func TestClientFollowsAMonitorsRebind(t *testing.T) {
	t.Parallel()
	r1, r2 := newFakeReplica(t, "r1", ""), newFakeReplica(t, "r2", "")
	fd := newFakeFrontDoor(t, r1, r2)
	mon, err := monitor.New(monitor.Options{
		Group:     testGroup,
		Token:     "replica-token",
		FrontDoor: fd.srv.URL,
		Mode:      protocol.MonitorPull,
		Address:   r1.srv.URL,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	r1.wrap(mon.Handler)

	tr := newTransport(client.Options{})
	for range 3 {
		do(t, tr, http.MethodGet, fd.srv.URL+"/prime/7", nil)
	}

	adv, _ := json.Marshal(protocol.Advisory{Advisory: protocol.High, Shed: 1, Epoch: 1, Clients: []string{tr.ClientID()}})
	req, _ := http.NewRequest(http.MethodGet, r1.srv.URL+monitor.DefaultPullPath, nil)
	req.Header.Set(protocol.HeaderAdvisory, string(adv))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rep, err := protocol.DecodeReport(data)
	if err != nil || len(rep.Clients) != 1 || rep.Clients[0].ID != tr.ClientID() {
		t.Fatalf("pulled report %s (%v), want this client listed", data, err)
	}

	code, got := do(t, tr, http.MethodPost, fd.srv.URL+"/echo", strings.NewReader("moved"))
	if code != http.StatusOK || got != "r2:moved" {
		t.Fatalf("%d %q, want r2:moved", code, got)
	}
	if n1, n2 := len(r1.ran()), len(r2.ran()); n1 != 3 || n2 != 1 {
		t.Fatalf("r1 ran %d and r2 ran %d calls, want 3 and 1", n1, n2)
	}
	if st := mon.Stats(); st.Rebinds != 1 || st.Calls != 3 {
		t.Fatalf("monitor stats %+v, want 3 calls and 1 rebind", st)
	}

	// A plain client following redirects is never sent back.
	fd.setPick(always(r1))
	if got := mon.Advisory().Advisory; got != protocol.High {
		t.Fatalf("advisory %q, want high still", got)
	}
	resp, err = http.Get(fd.srv.URL + "/plain")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Served-By") != "r1" {
		t.Fatalf("plain client: %d from %q, want 200 from r1", resp.StatusCode, resp.Header.Get("Served-By"))
	}
}
