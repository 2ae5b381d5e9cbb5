package monitor_test

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// loadProbe GETs the replica's load probe.
func loadProbe(t *testing.T, rp *replica) protocol.LoadProbe {
	t.Helper()
	resp, err := noRedirects.Get(rp.srv.URL + protocol.ProbePath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("load probe: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var lp protocol.LoadProbe
	if err := json.Unmarshal(body, &lp); err != nil {
		t.Fatalf("load probe answer %s: %v", body, err)
	}
	return lp
}

func TestLoadProbeAnswersRIFAndLatency(t *testing.T) {
	t.Parallel()
	admin := newFakeAdmin(t)
	rp := newReplica(t, admin, nil)
	rp.start(t)
	if got := loadProbe(t, rp); got != (protocol.LoadProbe{}) {
		t.Errorf("before any call: %+v, want zeros", got)
	}

	// Five calls of 3ms, one at a time, and a slow one.
	rp.setDuring(func(*http.Request) { rp.clock.Advance(3 * time.Millisecond) })
	rp.calls(t, "a", true, 5)
	rp.setDuring(func(*http.Request) { rp.clock.Advance(40 * time.Millisecond) })
	rp.calls(t, "a", true, 1)
	if got := loadProbe(t, rp); got != (protocol.LoadProbe{RIF: 0, LatencyMS: 3}) {
		t.Errorf("after 3ms calls: %+v, want rif 0, the median latency 3ms", got)
	}

	// A call in flight is counted; the estimate for a second one comes
	// from all calls, none having run two at a time.
	entered, release := make(chan struct{}), make(chan struct{})
	rp.setDuring(func(*http.Request) {
		close(entered)
		<-release
	})
	var wg sync.WaitGroup
	wg.Go(func() { rp.calls(t, "b", true, 1) })
	recvClosed(t, entered)
	if got := loadProbe(t, rp); got.RIF != 1 || got.LatencyMS != 3 {
		t.Errorf("with a call in flight: %+v, want rif 1, latency 3", got)
	}
	close(release)
	wg.Wait()

	// Probes are not calls.
	if st := rp.mon.Stats(); st.Calls != 7 || st.Inflight != 0 {
		t.Errorf("stats %+v, want the 7 calls, not the probes, and none in flight", st)
	}

	resp, err := noRedirects.Post(rp.srv.URL+protocol.ProbePath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST probe: %d, want 405", resp.StatusCode)
	}
}

// recvClosed waits, bounded, for ch to be closed.
func recvClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out")
	}
}
