//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
)

// TestBenchClusterSmoke runs "fulcrum bench cluster --smoke": three
// instances on a three-member etcd it starts itself. Every phase measures
// something (propagation, the three overhead configurations without
// errors, two fan-in windows with reports and their latency, an instance
// failover with the clients served again), and the leader failover is
// measured or says why not (while serve runs no analyzer leader); the
// targets are in results.json.
func TestBenchClusterSmoke(t *testing.T) {
	t.Parallel()
	etcdtest.Need(t)
	res, out := runBench(t, "cluster", "overhead.csv", "fanin.csv")
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
	statuses := map[string]string{}
	for _, tg := range extra.Targets {
		statuses[tg.Name] = tg.Status
	}
	for _, name := range []string{"propagation p99 ≤ 1 s", "instance failover ≤ 2 × session_ttl", "zero failed calls for bound on-demand clients when an instance dies"} {
		if statuses[name] == "" || statuses[name] == "not measured" {
			t.Errorf("target %q is %q, want it measured (targets %v)", name, statuses[name], statuses)
		}
	}
	if s := statuses["leader failover ≤ 2 × session_ttl"]; (s == "not measured") == extra.Leader.Measured {
		t.Errorf("leader failover target %q, but the phase says measured=%v", s, extra.Leader.Measured)
	}
}
