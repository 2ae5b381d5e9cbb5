package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// namingAdvisories wraps the admin API: while *names is set, the advisory
// a report gets is the real balancer's turned into a high one of epoch
// 99 naming those clients (the analyzer names clients only when it plans
// moves between replicas, which two workers of one replica do not give).
func namingAdvisories(names *atomic.Pointer[[]string]) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ids := names.Load()
			if r.URL.Path != "/v1/report" || ids == nil {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			var adv protocol.Advisory
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &adv) != nil {
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
				return
			}
			adv.Advisory, adv.Epoch, adv.Shed, adv.Clients = protocol.High, 99, 1, *ids
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(adv)
		})
	}
}

// TestWorkersShareOneReplica runs two monitors of one address as the two
// workers of a replica, each on its own real listener, against a real
// balancer: both get the same id and token, the balancer combines their
// reports into one replica whose load is the sum, each named client is
// sent back by exactly one worker (the one protocol.WorkerOf gives), and
// closing a worker does not deregister the replica.
func TestWorkersShareOneReplica(t *testing.T) {
	t.Parallel()
	var names atomic.Pointer[[]string]
	// The status shows the loads of the analyzer's last step: steps every
	// 200ms (the monitors' fake clocks still leave every report to
	// reportNow).
	admin, b := realBalancerEvery(t, namingAdvisories(&names), 200*time.Millisecond)
	events, unsubscribe, err := b.Subscribe(testGroup)
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	worker := func(index int, address string) *replica {
		return newReplica(t, nil, func(o *monitor.Options) {
			o.Admin, o.JoinToken = admin, "join"
			o.Worker = &protocol.Worker{Index: index, Count: 2}
			if address != "" {
				o.Address = address
			}
		})
	}
	w0 := worker(0, "")
	w1 := worker(1, w0.srv.URL) // another listener, the same replica address
	reg0, reg1 := w0.start(t), w1.start(t)
	if reg0.ID != reg1.ID || reg0.Token != reg1.Token {
		t.Fatalf("workers registered as %+v and %+v, want one id and token", reg0, reg1)
	}

	w0.calls(t, "a", true, 10)
	w1.calls(t, "b", true, 30)
	w1.reportNow(t, time.Second)
	w0.reportNow(t, time.Second) // worker 0 paces: the analyzer gets both
	deadline := time.After(10 * time.Second)
	var r protocol.ReplicaStatus
	for {
		st, err := b.Group(testGroup)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Replicas) != 1 {
			t.Fatalf("%d replicas, want the workers' one", len(st.Replicas))
		}
		// A step can fall between the two reports above (or come from a
		// report a worker sent on its own before them): the combination
		// is then of fewer fresh figures. Both reports reach the next one.
		if r = st.Replicas[0]; r.Load != nil && *r.Load == 40 && r.Metrics[protocol.MetricRPS] == 40 {
			break
		}
		select { // the next step
		case <-events:
		case <-deadline:
			if r.Load == nil {
				t.Fatal("no step with the replica's load within 10s")
			}
			t.Fatalf("combined load %v rps %v, want 10 + 30 = 40", *r.Load, r.Metrics[protocol.MetricRPS])
		}
	}
	if r.Workers == nil || *r.Workers != (protocol.WorkersStatus{Count: 2, Reporting: 2}) {
		t.Fatalf("workers %+v, want 2 of 2 reporting", r.Workers)
	}

	// A high advisory naming clients reaches both workers; each client is
	// sent back by its own worker only, once.
	ids := make([]string, 16)
	owned := [2]int{}
	for i := range ids {
		ids[i] = fmt.Sprintf("client-%02d", i)
		owned[protocol.WorkerOf(ids[i], 2)]++
		w0.calls(t, ids[i], true, 1)
		w1.calls(t, ids[i], true, 1)
	}
	if owned[0] == 0 || owned[1] == 0 {
		t.Fatalf("the test's clients all belong to one worker: %v", owned)
	}
	names.Store(&ids)
	adv0, adv1 := w0.reportNow(t, time.Second), w1.reportNow(t, time.Second)
	if adv0.Advisory != protocol.High || adv0.Epoch != adv1.Epoch || len(adv1.Clients) != len(ids) {
		t.Fatalf("advisories %+v and %+v, want the same high one naming %d clients", adv0, adv1, len(ids))
	}
	for _, id := range ids {
		sentBy := -1
		for i, w := range []*replica{w0, w1} {
			for range 2 { // a second call of the epoch is served
				code, _ := w.call(t, id, true, "/prime/7")
				if code == http.StatusTemporaryRedirect {
					if sentBy >= 0 {
						t.Errorf("client %s sent back twice (workers %d and %d)", id, sentBy, i)
					}
					sentBy = i
				}
			}
		}
		if want := protocol.WorkerOf(id, 2); sentBy != want {
			t.Errorf("client %s sent back by worker %d, want worker %d (FNV-1a-64 %% 2)", id, sentBy, want)
		}
	}
	if got := w0.mon.Stats().Rebinds + w1.mon.Stats().Rebinds; got != uint64(len(ids)) {
		t.Errorf("%d rebinds in all, want %d", got, len(ids))
	}

	// A worker that stops leaves the replica registered for its sibling.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w1.mon.Close(ctx); err != nil {
		t.Fatal(err)
	}
	names.Store(nil)
	w0.reportNow(t, time.Second)
	if st, err := b.Group(testGroup); err != nil || len(st.Replicas) != 1 || st.Replicas[0].State != protocol.StateActive {
		t.Fatalf("after a worker closed: %+v, %v; want the replica still active", st.Replicas, err)
	}
}

func TestWorkerOptionsValidated(t *testing.T) {
	t.Parallel()
	valid := monitor.Options{Admin: "http://127.0.0.1:7070", Group: "g", Address: "http://127.0.0.1:9001", Worker: &protocol.Worker{Index: 1, Count: 2}}
	tests := []struct {
		name string
		edit func(*monitor.Options)
	}{
		{"index at count", func(o *monitor.Options) { o.Worker = &protocol.Worker{Index: 2, Count: 2} }},
		{"no count", func(o *monitor.Options) { o.Worker = &protocol.Worker{} }},
		{"pull mode", func(o *monitor.Options) { o.Mode = protocol.MonitorPull }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := valid
			tc.edit(&o)
			if _, err := monitor.New(o); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
	if _, err := monitor.New(valid); err != nil {
		t.Fatalf("valid worker options: %v", err)
	}
}
