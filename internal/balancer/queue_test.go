package balancer_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A per-request group with a queue holds the call that finds its only
// replica full, shows it in its status, and hands it to a replica that
// joins meanwhile.
// In a synctest bubble (bubble_test.go).
func TestQueuedCallTakesAJoiningReplica(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testQueuedCallTakesAJoiningReplica)
}

func testQueuedCallTakesAJoiningReplica(t *testing.T) {
	n := memnet.New()
	e := newEnv(t, envOptions{net: n})
	entered := make(chan string, 4)
	release := make(chan struct{})
	gated := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- name
			<-release
			fmt.Fprint(w, name)
		})
	}
	st := e.mustPutGroup(protocol.Group{
		Name: "q", Binding: protocol.PerRequest, Strategy: strategy.LeastConnectionsName, MaxInflight: 1,
		Queue: protocol.Queue{Limit: 4, Timeout: protocol.Duration(10 * time.Second)},
	})
	if st.Queue.Order != protocol.QueueFIFO || st.QueueStats == nil {
		t.Fatalf("group status queue %+v, stats %v; want fifo by default and stats shown", st.Queue, st.QueueStats)
	}
	e.mustRegister("q", newMemReplica(t, n, gated("a")))
	c := memClient(t, n)
	answers := make(chan answer, 2)
	call := func(path string) {
		res, err := c.Get(st.Advertise + path)
		if err != nil {
			answers <- answer{body: err.Error()}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		answers <- answer{status: res.StatusCode, body: string(b)}
	}
	go call("/one")
	if got := recv(t, entered, 5*time.Second, "the first call"); got != "a" {
		t.Fatalf("first call went to %s", got)
	}
	go call("/two")
	eventually(t, 5*time.Second, func() error {
		if qs := e.mustGroup("q").QueueStats; qs == nil || qs.Waiting != 1 {
			return fmt.Errorf("queue stats %+v, want 1 waiting", qs)
		}
		return nil
	})
	e.mustRegister("q", newMemReplica(t, n, gated("b")))
	if got := recv(t, entered, 5*time.Second, "the queued call"); got != "b" {
		t.Fatalf("queued call went to %s, want the new replica b", got)
	}
	close(release)
	for range 2 {
		if a := recv(t, answers, 5*time.Second, "an answer"); a.status != http.StatusOK {
			t.Fatalf("answer %d %s, want 200", a.status, a.body)
		}
	}
	if qs := e.mustGroup("q").QueueStats; qs.Served != 1 || qs.Waiting != 0 {
		t.Fatalf("queue stats %+v, want 1 served", qs)
	}
}
