//go:build linux

package e2e

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
)

// TestBenchClusterSmoke runs "fulcrum bench cluster --smoke": three
// instances on a three-member etcd it starts itself. Every phase measures
// something (propagation, the three overhead configurations without
// errors, two fan-in windows with reports and their latency, an instance
// failover with the clients served again, the two effectiveness runs —
// one instance and three — with their calls served and each instance's
// bindings counted, too short to judge), and the leader failover is
// measured or says why not (while serve runs no analyzer leader); the
// targets are in results.json.
func TestBenchClusterSmoke(t *testing.T) {
	t.Parallel()
	etcdtest.Need(t)
	res, out := runBench(t, "cluster", "overhead.csv", "fanin.csv", "effectiveness.csv", "rates-one-instance.png", "rates-three-instances.png")
	if len(res.Rows) != 2 {
		t.Fatalf("rows %v, want one-instance and three-instances", res.Rows)
	}
	for _, row := range res.Rows {
		checkServed(t, row, 300)
	}
	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var extra struct {
		Control     map[string]any `json:"control"`
		Propagation struct {
			Registrations int     `json:"registrations"`
			P99MS         float64 `json:"p99_ms"`
		} `json:"propagation"`
		FanIn struct {
			Replicas               int     `json:"replicas"`
			RegistrationEtcdWrites float64 `json:"registration_etcd_writes"`
			FulcrumWritesMetric    string  `json:"fulcrum_writes_metric"`
			Windows                []struct {
				Reports       int64    `json:"reports"`
				Errors        int64    `json:"errors"`
				LatencyP99MS  float64  `json:"report_latency_p99_ms"`
				CPU           *float64 `json:"instance_cpu_us_per_report"`
				EtcdWrites    *float64 `json:"etcd_writes_per_second"`
				FulcrumWrites *float64 `json:"fulcrum_etcd_writes_per_second"`
			} `json:"windows"`
		} `json:"fan_in"`
		Failover struct {
			FirstSuccessMaxMS float64 `json:"first_success_max_ms"`
			PerRequestCalls   int64   `json:"per_request_calls"`
			OnDemandCalls     int64   `json:"on_demand_calls"`
		} `json:"instance_failover"`
		Leader struct {
			Measured bool    `json:"measured"`
			Reason   string  `json:"reason"`
			Killed   string  `json:"killed"`
			OldTerm  uint64  `json:"old_term"`
			NewTerm  uint64  `json:"new_term"`
			MS       float64 `json:"new_term_advisory_ms"`
		} `json:"leader_failover"`
		Effectiveness []struct {
			Config    string         `json:"config"`
			Leader    string         `json:"leader"`
			ClientsAt map[string]int `json:"clients_at"`
			Run       struct {
				Count     int64     `json:"calls"`
				Errors    int64     `json:"errors"`
				DurationS int       `json:"duration_s"`
				Rates     []float64 `json:"replica_rates"`
				Target    string    `json:"target"`
			} `json:"run"`
			Instances []struct {
				Name     string `json:"name"`
				Leader   bool   `json:"leader"`
				Bindings uint64 `json:"bindings"`
			} `json:"instances"`
		} `json:"effectiveness"`
		Targets []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(raw, &extra); err != nil {
		t.Fatal(err)
	}
	if extra.Control["name"] != "one-instance-control" {
		t.Errorf("control %v, want the one-instance-control row", extra.Control)
	}
	if p := extra.Propagation; p.Registrations != 20 || !(p.P99MS > 0) {
		t.Errorf("propagation %+v, want 20 registrations timed", p)
	}
	if f := extra.FanIn; f.Replicas != 30 || len(f.Windows) != 2 || f.RegistrationEtcdWrites < 30 || f.FulcrumWritesMetric != "fulcrum_store_etcd_writes_total" {
		t.Errorf("fan-in %+v, want 30 replicas, two windows, at least one etcd write per registration and fulcrum's own count", f)
	}
	for i, w := range extra.FanIn.Windows {
		if w.Reports == 0 || w.Errors != 0 || !(w.LatencyP99MS > 0) || w.CPU == nil || w.EtcdWrites == nil || w.FulcrumWrites == nil {
			t.Errorf("fan-in window %d: %+v, want reports without errors, their latency, CPU, etcd's and fulcrum's etcd writes", i, w)
		}
	}
	if f := extra.Failover; !(f.FirstSuccessMaxMS > 0) || f.PerRequestCalls == 0 || f.OnDemandCalls == 0 {
		t.Errorf("instance failover %+v, want calls of both bindings and the time to the first success", f)
	}
	// Measured once serve runs the analyzer leader; until then not, saying
	// why.
	switch l := extra.Leader; {
	case l.Measured && (l.Killed == "" || l.OldTerm == 0 || !(l.MS > 0)):
		t.Errorf("leader failover %+v, want the killed leader, its term and the time to a higher one", l)
	case l.Measured && l.NewTerm != 0 && l.NewTerm <= l.OldTerm:
		t.Errorf("leader failover %+v: the new term is not higher", l)
	case !l.Measured && l.Reason == "":
		t.Errorf("leader failover %+v, not measured without saying why", l)
	}
	if e := extra.Effectiveness; len(e) != 2 || e[0].Config != "one-instance" || e[1].Config != "three-instances" {
		t.Errorf("effectiveness %+v, want the one-instance and three-instances runs", e)
	}
	for _, e := range extra.Effectiveness {
		var bindings uint64
		leaders := 0
		for _, in := range e.Instances {
			bindings += in.Bindings
			if in.Leader {
				leaders++
				if in.Name != e.Leader {
					t.Errorf("effectiveness %s: instance %s marked leader, the leader is %q", e.Config, in.Name, e.Leader)
				}
			}
		}
		// 8 clients; 2 s at 600 calls/s together.
		if e.Run.Count < 600 || e.Run.Errors != 0 || e.Run.DurationS != 2 || len(e.Run.Rates) != 2 || len(e.Instances) != 3 || leaders != 1 || bindings < 8 {
			t.Errorf("effectiveness %s: %+v, want 2 s of calls on 2 replicas without errors, three instances with one leader and every client bound", e.Config, e)
		}
		want := map[string]int{e.Leader: 8}
		if e.Config == "three-instances" {
			want = map[string]int{"fulcrum-a": 3, "fulcrum-b": 3, "fulcrum-c": 2}
		}
		if !maps.Equal(e.ClientsAt, want) {
			t.Errorf("effectiveness %s: clients at %v, want %v", e.Config, e.ClientsAt, want)
		}
	}
	statuses := map[string]string{}
	for _, tg := range extra.Targets {
		statuses[tg.Name] = tg.Status
	}
	for _, name := range []string{"propagation p99 ≤ 1 s", "instance failover ≤ 2 × session_ttl", "zero failed calls for bound on-demand clients when an instance dies"} {
		if statuses[name] == "" || statuses[name] == "not measured" {
			t.Errorf("target %q is %q, want it measured (targets %v)", name, statuses[name], statuses)
		}
	}
	// A 2 s run is too short to judge equilibrium (at least 20 s).
	if s := statuses["equilibrium ≤ 10 s with three instances"]; s != "not measured" {
		t.Errorf("equilibrium target %q after 2 s runs, want not measured (targets %v)", s, statuses)
	}
	if s := statuses["leader failover ≤ 2 × session_ttl"]; (s == "not measured") == extra.Leader.Measured {
		t.Errorf("leader failover target %q, but the phase says measured=%v", s, extra.Leader.Measured)
	}
}
