package tcp

import (
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// rowsFor builds a run's rows: every part for fulcrum, HAProxy and NGINX,
// with fulcrum's throughput and p99 as factors of HAProxy's, and edit
// applied to each row.
func rowsFor(tputX, p99X float64, edit func(*Row)) []Row {
	var rows []Row
	add := func(part string, conns int) {
		for _, name := range []string{ArmFulcrum, ArmHAProxy, ArmNGINX} {
			f := &bench.Figures{Summary: stats.Summary{Count: 1000, P50: 100, P99: 400}, ThroughputRPS: 10000}
			r := Row{Part: part, Name: name, Connections: conns, Figures: f}
			if part == PartBulk {
				r.ThroughputMiBs = 500
			}
			if name == ArmFulcrum {
				f.ThroughputRPS *= tputX
				f.P99 *= p99X
				r.ThroughputMiBs *= tputX
			}
			if part == PartIdle {
				r.Figures = nil
				r.Memory = &Memory{RSSPerConnectionBytes: 2048, FDsPerConnection: 2}
			}
			if edit != nil {
				edit(&r)
			}
			rows = append(rows, r)
		}
	}
	for _, n := range ExchangeConnections {
		add(PartExchange, n)
	}
	add(PartBulk, BulkConnections)
	add(PartConnect, ConnectConnections)
	add(PartIdle, 10000)
	return rows
}

func TestJudge(t *testing.T) {
	t.Parallel()
	// 8 exchange targets (throughput and p99 at 4 counts), 2 bulk, 1 new
	// connections, 1 memory.
	const all = 12
	for _, tc := range []struct {
		name            string
		rows            []Row
		met, missed, nm int
		detail          string // in some target's detail
	}{
		{name: "ahead", rows: rowsFor(1.2, 0.8, nil), met: all, detail: "(1.20×)"},
		{name: "equal", rows: rowsFor(1, 1, nil), met: all},
		{name: "behind", rows: rowsFor(0.9, 1.1, nil), met: 1, missed: all - 1, detail: "(0.90×)"},
		{name: "faster but slower tail", rows: rowsFor(1.1, 1.5, nil), met: 6 + 1, missed: 5},
		{name: "fulcrum failed operations", rows: rowsFor(1.2, 0.8, func(r *Row) {
			if r.Name == ArmFulcrum && r.Figures != nil {
				r.Errors, r.FirstError = 3, "connection reset by peer"
			}
		}), met: 1, missed: all - 1, detail: "3 failed operations (first: connection reset by peer)"},
		{name: "haproxy missing", rows: rowsFor(1.2, 0.8, func(r *Row) {
			if r.Name == ArmHAProxy {
				r.Figures, r.Memory, r.Skipped = nil, nil, "haproxy is not installed (apt-get install haproxy)"
			}
		}), nm: all, detail: "HAProxy not run: haproxy is not installed"},
		{name: "fulcrum not run", rows: rowsFor(1.2, 0.8, func(r *Row) {
			if r.Name == ArmFulcrum {
				r.Figures, r.Memory, r.Skipped = nil, nil, "no tcp front door"
			}
		}), nm: all, detail: "fulcrum not run: no tcp front door"},
		{name: "nginx's memory missing", rows: rowsFor(1.2, 0.8, func(r *Row) {
			if r.Name == ArmNGINX && r.Part == PartIdle {
				r.Memory, r.Skipped = nil, "no stream module"
			}
		}), met: all - 1, nm: 1, detail: "nginx not measured: no stream module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := judge(tc.rows)
			if len(ts) != all {
				t.Fatalf("%d targets, want %d: %+v", len(ts), all, ts)
			}
			count := map[bench.TargetStatus]int{}
			found := tc.detail == ""
			for _, tg := range ts {
				count[tg.Status]++
				found = found || strings.Contains(tg.Detail, tc.detail)
			}
			if count[bench.Met] != tc.met || count[bench.Missed] != tc.missed || count[bench.Unknown] != tc.nm {
				t.Errorf("met %d, missed %d, not measured %d; want %d, %d, %d: %+v", count[bench.Met], count[bench.Missed], count[bench.Unknown], tc.met, tc.missed, tc.nm, ts)
			}
			if !found {
				t.Errorf("no target's detail says %q: %+v", tc.detail, ts)
			}
		})
	}
}

// Ratios are against HAProxy's row of the same part and connection count.
func TestAddRatios(t *testing.T) {
	t.Parallel()
	rows := rowsFor(1.5, 0.5, nil)
	addRatios(rows)
	for _, r := range rows {
		if r.VsHAProxy == nil {
			t.Fatalf("%s %s: no ratios", r.Part, r.Name)
		}
		want := 1.0
		if r.Name == ArmFulcrum && r.Part != PartIdle {
			want = 1.5
		}
		if r.Part != PartIdle && r.VsHAProxy.Throughput != want {
			t.Errorf("%s %s %d: throughput ratio %v, want %v", r.Part, r.Name, r.Connections, r.VsHAProxy.Throughput, want)
		}
		if r.Part == PartIdle && r.VsHAProxy.RSSPerConnection != 1 {
			t.Errorf("%s %s: memory ratio %v, want 1", r.Part, r.Name, r.VsHAProxy.RSSPerConnection)
		}
	}
}
