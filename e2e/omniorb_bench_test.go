//go:build linux

package e2e

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench/omniorb"
)

// needOmniORB skips the test when omniORB's C++ toolchain is missing, and
// fails it when CI=true (scripts/test.sh installs it).
func needOmniORB(t *testing.T) {
	t.Helper()
	if _, err := omniorb.Check(); err != nil {
		if me := (*omniorb.MissingError)(nil); errors.As(err, &me) && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		t.Fatalf("omniORB is required (CI=true): %v; scripts/test.sh installs it", err)
	}
}

// runBenchOmniORB runs "fulcrum bench NAME --protocol giop --orb omniorb
// --smoke" and returns results.json, and its settings member.
func runBenchOmniORB(t *testing.T, name string, extra ...string) (benchResults, map[string]any) {
	t.Helper()
	needOmniORB(t)
	raw, _ := benchSmoke(t, "fulcrum bench "+name+" --orb omniorb", name, []string{"--protocol", "giop", "--orb", "omniorb"}, extra...)
	var res benchResults
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	var top struct {
		Settings map[string]any `json:"settings"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if res.Experiment != name || top.Settings["orb"] != "omniorb" || top.Settings["protocol"] != "giop" {
		t.Errorf("results.json: experiment %q, settings %v; want orb omniorb over giop", res.Experiment, top.Settings)
	}
	return res, top.Settings
}

// The overhead experiment with omniORB C++ servers and clients: direct,
// the side-car agent alone, per-session, per-request and on-demand serve
// every call, and the agent's own CPU is metered.
func TestBenchOverheadOmniORBSmoke(t *testing.T) {
	t.Parallel()
	res, _ := runBenchOmniORB(t, "overhead")
	var names []string
	for _, row := range res.Rows {
		name := checkOverheadRowGIOP(t, row)
		names = append(names, name)
		if name == "agent" {
			if v, ok := row["proxy_cpu_us_per_call"].(float64); !ok || !(v > 0) {
				t.Errorf("row agent: proxy_cpu_us_per_call = %v, want the agent's CPU per call", row["proxy_cpu_us_per_call"])
			}
		}
	}
	if want := []string{"direct", "agent", "per-session", "per-request", "on-demand", "haproxy", "nginx"}; !slices.Equal(names, want) {
		t.Errorf("rows %v, want %v", names, want)
	}
}

// The effectiveness experiment with omniORB C++ replicas (behind agents)
// and clients: an on-demand run and a per-request run serve their calls,
// counted for the group's replicas.
func TestBenchEffectivenessOmniORBSmoke(t *testing.T) {
	t.Parallel()
	res, settings := runBenchOmniORB(t, "effectiveness", "--runs", "least-loaded/on-demand,power-of-two/per-request")
	if len(res.Rows) != 2 {
		t.Fatalf("%d runs, want 2", len(res.Rows))
	}
	// Client i (in start order) calls from 100 ms × i after the start
	// until the end of the 3 s run.
	wantCalls := 0.0
	for i, r := range settings["rates"].([]any) {
		wantCalls += math.Ceil((3 - 0.1*float64(i)) * r.(float64))
	}
	for _, row := range res.Rows {
		checkReplicaRates(t, row)
		// Every call is made and answered.
		if row["calls"] != wantCalls || row["errors"] != 0.0 {
			t.Errorf("run %v: calls %v (want %v), errors %v", row["name"], row["calls"], wantCalls, row["errors"])
		}
		if v, ok := row["latency_p50_us"].(float64); !ok || !(v > 0) {
			t.Errorf("run %v: latency_p50_us = %v", row["name"], row["latency_p50_us"])
		}
	}
}

// --orb is go or omniorb, and omniorb runs over GIOP only: anything else
// is a usage error (exit 2) naming the flag.
func TestBenchORBUsage(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, time.Minute)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "overhead", "--protocol", "giop", "--orb", "tao", "--out", t.TempDir()}, `--orb "tao": must be "go" or "omniorb"`},
		{[]string{"bench", "effectiveness", "--orb", "omniorb", "--out", t.TempDir()}, `--orb "omniorb": needs --protocol "giop"`},
	} {
		code, _, stderr := run(ctx, t, "fulcrum "+strings.Join(c.args, " "), c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("fulcrum %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}
