package balancer_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestSlowClientsDoNotEjectAReplica: clients that trickle their request
// bodies past the request timeout get 504, but a timeout on the client's
// side of the call is never the replica's failure: after twelve such
// uploads (passive ejection after 3 failures) both replicas are still
// active, their failure counters unchanged, and they still serve.
func TestSlowClientsDoNotEjectAReplica(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	a, b := newReplica(t, named("good")), newReplica(t, named("good"))
	gs := e.mustPutGroup(protocol.Group{
		Name: "slow", Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName, ReportInterval: ms(20),
		Health: protocol.Health{Passive: protocol.Passive{ConsecutiveFailures: 3, BaseEjection: ms(60_000)}},
		// Wide enough that the front door has dialed the replica and
		// written the head before the time runs out, even on a loaded
		// machine: the time must run out waiting for the client.
		Timeouts: protocol.Timeouts{Request: ms(1000)},
	})
	ids := []string{e.mustRegister("slow", a.URL).ID, e.mustRegister("slow", b.URL).ID}
	u, err := url.Parse(gs.Advertise)
	if err != nil {
		t.Fatal(err)
	}
	const uploads = 12
	statuses := make(chan int, uploads)
	for range uploads {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		// 1000 bytes announced, 2 sent, then nothing.
		if _, err := io.WriteString(conn, "POST /upload HTTP/1.1\r\nHost: fd\r\nContent-Length: 1000\r\n\r\nab"); err != nil {
			t.Fatal(err)
		}
		go func() {
			res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodPost})
			if err != nil {
				statuses <- 0
				return
			}
			res.Body.Close()
			statuses <- res.StatusCode
		}()
	}
	for range uploads {
		if st := recv(t, statuses, 10*time.Second, "a slow upload's answer"); st != http.StatusGatewayTimeout {
			t.Errorf("slow upload answered %d, want 504", st)
		}
	}
	st := e.mustGroup("slow")
	for _, id := range ids {
		if got := replicaOf(t, st, id); got.State != protocol.StateActive || got.Counters.Failures != 0 {
			t.Errorf("after %d slow clients %s is %s with %d failures; want active with 0", uploads, id, got.State, got.Counters.Failures)
		}
	}
	c := httpClient(t)
	for range 2 {
		if a := get(t, c, gs.Advertise+"/work"); a.status != http.StatusOK || a.body != "good" {
			t.Errorf("after the slow clients: %d %q, want a replica's answer", a.status, a.body)
		}
	}
}
