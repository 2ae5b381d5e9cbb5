package monitor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestSingleNodeTermZeroChangesNothing: a real single-node balancer
// answers reports with "term": 0, and a monitor obeys its advisories as
// before: its drain is applied (term 0 is never below the highest seen on
// a single node), and its nominal after activation too.
func TestSingleNodeTermZeroChangesNothing(t *testing.T) {
	t.Parallel()
	admin, b := realBalancer(t, nil)
	rp := newReplica(t, nil, func(o *monitor.Options) {
		o.Admin, o.JoinToken = admin, "join"
	})
	reg := rp.start(t)

	// The wire carries the term, as 0.
	req, _ := http.NewRequest(http.MethodPost, admin+"/v1/report", bytes.NewReader([]byte(`{"load": 1}`)))
	req.Header.Set("Authorization", "Bearer "+reg.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("report: %d, %v", resp.StatusCode, err)
	}
	if got := string(raw["term"]); got != "0" {
		t.Fatalf(`advisory "term" = %q, want 0 on a single node; answer %v`, got, raw)
	}

	rp.calls(t, "a", true, 1)
	if err := b.Drain(testGroup, reg.ID); err != nil {
		t.Fatal(err)
	}
	if adv := rp.reportNow(t, time.Second); adv.Advisory != protocol.Drain || adv.Term != 0 {
		t.Fatalf("after Drain the balancer advised %+v, want drain in term 0", adv)
	}
	if got := rp.mon.Advisory(); got.Advisory != protocol.Drain {
		t.Fatalf("the monitor obeys %+v, want the term-0 drain", got)
	}
	if code, _ := rp.call(t, "a", true, "/"); code != http.StatusTemporaryRedirect {
		t.Fatalf("bound call under the term-0 drain: %d, want 307", code)
	}
	if err := b.Activate(testGroup, reg.ID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if adv, err := rp.mon.ReportNow(ctx); err != nil || adv.Advisory != protocol.Nominal {
		t.Fatalf("after Activate: %+v, %v; want nominal", adv, err)
	}
	if got := rp.mon.Advisory().Advisory; got != protocol.Nominal {
		t.Fatalf("the monitor obeys %q after the term-0 nominal, want nominal", got)
	}
	rp.calls(t, "a", true, 1)
}
