package strategy_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
)

// These tests hold every registered strategy to the package's contracts.

// loadedGroup is a group in a state every strategy can pick from: unequal
// weights, some calls in flight, bindings, fresh reports and metrics.
func loadedGroup() []*strategy.Replica {
	rs := withBindings(withInflight(replicaSet(3, 1, 2, 1, 1, 2, 4, 1), 2, 0, 1, 3, 0, 0, 5, 1), 4, 1, 0, 2, 7, 0, 1, 3)
	for i, r := range rs {
		r.Reported = true
		r.Load = float64(10 + 3*i)
		reportInflight(r, float64(i%3))
		r.Metrics.LatencyMS = float64(5 + i)
		r.Metrics.RPS = float64(100 - i)
	}
	return rs
}

func TestEveryStrategyBuildsWithDefaults(t *testing.T) {
	t.Parallel()
	for _, name := range strategy.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, _ := strategy.Lookup(name)
			env, _ := seededEnv(1)
			for _, params := range []map[string]any{nil, {}, d.Defaults()} {
				s, err := strategy.New(name, params, env)
				if err != nil {
					t.Fatalf("New(%q, %v): %v", name, params, err)
				}
				if s.Name() != name {
					t.Errorf("Name() = %q, want %q", s.Name(), name)
				}
			}
			if d.Summary == "" {
				t.Error("no Summary")
			}
		})
	}
}

func TestEveryStrategyRejectsUnknownParam(t *testing.T) {
	t.Parallel()
	for _, name := range strategy.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, _ := strategy.Lookup(name)
			params := d.Defaults()
			params["no_such_param"] = 1
			_, err := strategy.New(name, params, strategy.Env{})
			var pe *strategy.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("New with an unknown param: err = %v, want a *ParamError", err)
			}
			if pe.Strategy != name || pe.Field != "no_such_param" {
				t.Errorf("ParamError names %q field %q, want %q field %q", pe.Strategy, pe.Field, name, "no_such_param")
			}
		})
	}
}

func TestEveryStrategyFailsWithNoReplica(t *testing.T) {
	t.Parallel()
	for _, name := range strategy.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env, _ := seededEnv(1)
			s := mustBuild(t, name, nil, env)
			for _, rs := range [][]*strategy.Replica{nil, {}} {
				r, err := s.Picker(rs).Pick(&strategy.Request{Key: "k", Client: "c"})
				if !errors.Is(err, strategy.ErrNoReplica) || r != nil {
					t.Errorf("Pick over %d replicas = %v, %v; want nil, ErrNoReplica", len(rs), r, err)
				}
			}
		})
	}
}

func TestEveryPickDoesNotAllocate(t *testing.T) {
	// Not parallel: AllocsPerRun counts the whole process's allocations.
	for _, name := range strategy.Names() {
		t.Run(name, func(t *testing.T) {
			env, clock := seededEnv(1)
			s := mustBuild(t, name, nil, env)
			rs := loadedGroup()
			if o, ok := s.(strategy.Observer); ok {
				for i, r := range rs[:4] {
					o.Observe(r, time.Duration(i+1)*time.Millisecond, false)
				}
				clock.Advance(time.Second)
			}
			p := s.Picker(rs)
			for _, req := range []*strategy.Request{{Key: "10.0.0.7", Client: "c1"}, {}} {
				allocs := testing.AllocsPerRun(1000, func() {
					if _, err := p.Pick(req); err != nil {
						t.Fatal(err)
					}
				})
				if allocs != 0 {
					t.Errorf("Pick(%+v) allocates %v times per call, want 0", *req, allocs)
				}
			}
		})
	}
}

func TestEveryPickerIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	for _, name := range strategy.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env, clock := seededEnv(7)
			s := mustBuild(t, name, nil, env)
			rs := loadedGroup()
			p := s.Picker(rs)
			o, _ := s.(strategy.Observer)
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					req := &strategy.Request{Key: string(rune('a' + g))}
					for i := range 500 {
						r, err := p.Pick(req)
						if err != nil {
							t.Error(err)
							return
						}
						if r != rs[r.Index] {
							t.Errorf("picked %s, not a replica of the snapshot", r.ID)
							return
						}
						r.Live.Inflight.Add(1)
						if o != nil {
							o.Observe(r, time.Duration(i%7)*time.Millisecond, i%11 == 0)
						}
						clock.Advance(time.Millisecond)
						r.Live.Inflight.Add(-1)
					}
				})
			}
			wg.Wait()
		})
	}
}

func BenchmarkPick(b *testing.B) {
	for _, name := range strategy.Names() {
		b.Run(name, func(b *testing.B) {
			env, _ := seededEnv(1)
			s := mustBuild(b, name, nil, env)
			p := s.Picker(loadedGroup())
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := &strategy.Request{Key: "10.1.2.3"}
				for pb.Next() {
					if _, err := p.Pick(req); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func TestParamErrorsNameStrategyFieldValueAndRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		strategy string
		params   map[string]any
		field    string
		msg      string // the whole message, when not empty
	}{
		{"round-robin takes no params", strategy.RoundRobinName, map[string]any{"weight": 2}, "weight", ""},
		{"bias below range", strategy.PowerOfTwoName, map[string]any{"bias": -1}, "bias", "power-of-two: bias -1, must be in [0,10]"},
		{"bias above range", strategy.PowerOfTwoName, map[string]any{"bias": 10.5}, "bias", "power-of-two: bias 10.5, must be in [0,10]"},
		{"bias of the wrong type", strategy.PowerOfTwoName, map[string]any{"bias": "high"}, "bias", ""},
		{"key without source", strategy.ConsistentHashName, map[string]any{"key": "session"}, "key", ""},
		{"header key without name", strategy.ConsistentHashName, map[string]any{"key": "header:"}, "key", ""},
		{"header name not a token", strategy.ConsistentHashName, map[string]any{"key": "header:X User"}, "key", ""},
		{"cookie name not a token", strategy.ConsistentHashName, map[string]any{"key": "cookie:a;b"}, "key", ""},
		{"unknown method", strategy.ConsistentHashName, map[string]any{"method": "rendezvous"}, "method",
			"consistent-hash: method rendezvous, must be one of: maglev, ring"},
		{"table size not prime", strategy.ConsistentHashName, map[string]any{"table_size": 65536}, "table_size",
			"consistent-hash: table_size 65536, must be a prime in [7,4194304], such as 65537"},
		{"table size too small", strategy.ConsistentHashName, map[string]any{"table_size": 5}, "table_size", ""},
		{"table size too large", strategy.ConsistentHashName, map[string]any{"table_size": 16777259}, "table_size", ""},
		{"no vnodes", strategy.ConsistentHashName, map[string]any{"method": "ring", "vnodes": 0}, "vnodes",
			"consistent-hash: vnodes 0, must be in [1,1000]"},
		{"decay too short", strategy.PeakEWMAName, map[string]any{"decay": "1ms"}, "decay",
			"peak-ewma: decay 1ms, must be in [100ms,10m0s]"},
		{"zero default rtt", strategy.PeakEWMAName, map[string]any{"default_rtt": "0s"}, "default_rtt", ""},
		{"failure rtt too long", strategy.PeakEWMAName, map[string]any{"failure_rtt": "2m"}, "failure_rtt", ""},
		{"albl period too short", strategy.ALBLName, map[string]any{"period": "10ms"}, "period",
			"albl: period 10ms, must be in [100ms,1h0m0s]"},
		{"albl delay timeout beyond the period", strategy.ALBLName, map[string]any{"delay_timeout": "2s"}, "delay_timeout",
			"albl: delay_timeout 2s, must be in [1ms,1s]"},
		{"albl http timeout beyond the period", strategy.ALBLName, map[string]any{"period": "200ms", "http_timeout": "300ms"}, "http_timeout", ""},
		{"albl object not a path", strategy.ALBLName, map[string]any{"object": "index.html"}, "object", ""},
		{"albl object with a space", strategy.ALBLName, map[string]any{"object": "/a b"}, "object", ""},
		{"ett zero cpu capacity", strategy.ETTName, map[string]any{"cpu_capacity": 0}, "cpu_capacity",
			"ett: cpu_capacity 0, must be in (0,1e+18]"},
		{"ett negative bw capacity", strategy.ETTName, map[string]any{"bw_capacity": -1}, "bw_capacity", ""},
		{"ett negative replica capacity", strategy.ETTName, map[string]any{"capacities": map[string]any{"r1": map[string]any{"cpu": -2}}}, "capacities.r1.cpu", ""},
		{"ett unknown capacity field", strategy.ETTName, map[string]any{"capacities": map[string]any{"r1": map[string]any{"disk": 2}}}, "disk", ""},
		{"ett negative cost", strategy.ETTName, map[string]any{"cpu_cost": -1}, "cpu_cost", ""},
		{"ett path not a path", strategy.ETTName, map[string]any{"paths": map[string]any{"count": map[string]any{"cpu": 1}}}, "paths", ""},
		{"ett inflight too large", strategy.ETTName, map[string]any{"inflight": 101}, "inflight", ""},
		{"ett max load of 1", strategy.ETTName, map[string]any{"max_load": 1}, "max_load", "ett: max_load 1, must be in [0,0.999]"},
		{"ett tolerance below 1", strategy.ETTName, map[string]any{"tolerance": 0.9}, "tolerance", "ett: tolerance 0.9, must be in [1,10]"},
		{"orca negative penalty", strategy.WeightedRoundRobinORCAName, map[string]any{"error_utilization_penalty": -1}, "error_utilization_penalty", ""},
		{"orca update period below A58's floor", strategy.WeightedRoundRobinORCAName, map[string]any{"weight_update_period": "50ms"}, "weight_update_period",
			"weighted-round-robin-orca: weight_update_period 50ms, must be in [100ms,1h0m0s]"},
		{"orca expiry too short", strategy.WeightedRoundRobinORCAName, map[string]any{"weight_expiration_period": "500ms"}, "weight_expiration_period", ""},
		{"orca blackout too long", strategy.WeightedRoundRobinORCAName, map[string]any{"blackout_period": "2h"}, "blackout_period", ""},
		{"prequal pool too large", strategy.PrequalName, map[string]any{"pool_size": 65}, "pool_size", "prequal: pool_size 65, must be in [1,64]"},
		{"prequal q_rif above 1", strategy.PrequalName, map[string]any{"q_rif": 1.5}, "q_rif", ""},
		{"prequal no reuse", strategy.PrequalName, map[string]any{"max_reuse": 0}, "max_reuse", ""},
		{"prequal too many probes", strategy.PrequalName, map[string]any{"probes_per_query": 17}, "probes_per_query", ""},
		{"prequal path not a path", strategy.PrequalName, map[string]any{"path": "probe"}, "path", ""},
		{"prequal interval too short", strategy.PrequalName, map[string]any{"probe_interval": "100µs"}, "probe_interval", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := strategy.New(tt.strategy, tt.params, strategy.Env{})
			var pe *strategy.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParamError", err)
			}
			if pe.Strategy != tt.strategy || pe.Field != tt.field {
				t.Errorf("error names %q field %q, want %q field %q (%v)", pe.Strategy, pe.Field, tt.strategy, tt.field, err)
			}
			if tt.msg != "" && err.Error() != tt.msg {
				t.Errorf("error = %q, want %q", err, tt.msg)
			}
		})
	}
}

func TestValidParamsAreAccepted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		strategy string
		params   map[string]any
	}{
		{"power-of-two bias 0", strategy.PowerOfTwoName, map[string]any{"bias": 0}},
		{"power-of-two bias 10", strategy.PowerOfTwoName, map[string]any{"bias": 10}},
		{"consistent-hash key from a header", strategy.ConsistentHashName, map[string]any{"key": "header:X-User-Id"}},
		{"consistent-hash ring keyed by a cookie", strategy.ConsistentHashName, map[string]any{"key": "cookie:session", "method": "ring", "vnodes": 1000}},
		{"consistent-hash smallest table", strategy.ConsistentHashName, map[string]any{"table_size": 7}},
		{"consistent-hash largest table", strategy.ConsistentHashName, map[string]any{"table_size": 4194301}},
		{"peak-ewma lowest durations", strategy.PeakEWMAName, map[string]any{"decay": "100ms", "default_rtt": "1µs", "failure_rtt": "0s"}},
		{"peak-ewma highest durations", strategy.PeakEWMAName, map[string]any{"decay": "10m", "default_rtt": "1m", "failure_rtt": "1m"}},
		{"albl shortest period and timeouts", strategy.ALBLName, map[string]any{"period": "100ms", "delay_timeout": "100ms", "http_timeout": "1ms", "threshold": "0s", "object": "/static/1k.bin?x=1"}},
		{"albl longest period and timeouts", strategy.ALBLName, map[string]any{"period": "1h", "delay_timeout": "1h", "http_timeout": "1h", "threshold": "1h"}},
		{"ett capacities and paths", strategy.ETTName, map[string]any{"capacities": map[string]any{"http://10.0.0.1:8080/": map[string]any{"cpu": 2e9, "bw": 0}}, "paths": map[string]any{"/count": map[string]any{"cpu": 0.03}}}},
		{"ett costs at their bounds", strategy.ETTName, map[string]any{"inflight": 0, "max_load": 0, "cpu_cost": 0, "data_cost": 1e18}},
		{"orca periods at their bounds", strategy.WeightedRoundRobinORCAName, map[string]any{"blackout_period": "0s", "weight_expiration_period": "1s", "weight_update_period": "100ms", "error_utilization_penalty": 0}},
		{"prequal lowest bounds", strategy.PrequalName, map[string]any{"pool_size": 1, "max_reuse": 1, "q_rif": 0, "probes_per_query": 0, "probe_interval": "1ms", "max_age": "1ms"}},
		{"prequal highest bounds and a probe path", strategy.PrequalName, map[string]any{"pool_size": 64, "max_reuse": 1000, "q_rif": 1, "probes_per_query": 16, "path": "/lb/probe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := strategy.New(tt.strategy, tt.params, strategy.Env{}); err != nil {
				t.Errorf("New(%q, %v): %v", tt.strategy, tt.params, err)
			}
		})
	}
}
