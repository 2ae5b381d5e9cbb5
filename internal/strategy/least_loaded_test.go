package strategy

import (
	"encoding/json"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func testEnv(seed uint64) Env {
	return Env{Now: func() time.Time { return time.Unix(0, 0) }, Rand: NewRand(seed)}
}

func reported(id string, load float64, clients int) *Replica {
	return &Replica{ID: id, Weight: 1, Reported: true, Load: load, Clients: clients, Metrics: NoMetrics, Live: new(Live)}
}

func indexed(rs ...*Replica) []*Replica {
	for i, r := range rs {
		r.Index = i
	}
	return rs
}

func TestLeastLoadedParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		strategy  string
		params    map[string]any
		wantField string // "" for valid
	}{
		{"defaults", LeastLoadedName, nil, ""},
		{"issue example", LeastLoadedName, map[string]any{"dampening": 0.5, "tolerance": 1.05}, ""},
		{"everything", LeastLoadedName, map[string]any{
			"dampening": 0, "tolerance": 10, "per_balance_load": 12.5, "reject_threshold": 500,
			"critical_threshold": 300, "critical_relative": 0,
		}, ""},
		{"auto per-balance", LeastLoadedName, map[string]any{"per_balance_load": "auto"}, ""},
		{"dampening 1", LeastLoadedName, map[string]any{"dampening": 1.0}, "dampening"},
		{"dampening negative", LeastLoadedName, map[string]any{"dampening": -0.1}, "dampening"},
		{"dampening a string", LeastLoadedName, map[string]any{"dampening": "half"}, "dampening"},
		{"tolerance below 1", LeastLoadedName, map[string]any{"tolerance": 0.99}, "tolerance"},
		{"tolerance above 10", LeastLoadedName, map[string]any{"tolerance": 11}, "tolerance"},
		{"per-balance word", LeastLoadedName, map[string]any{"per_balance_load": "some"}, "per_balance_load"},
		{"per-balance negative", LeastLoadedName, map[string]any{"per_balance_load": -1}, "per_balance_load"},
		{"per-balance bool", LeastLoadedName, map[string]any{"per_balance_load": true}, "per_balance_load"},
		{"reject negative", LeastLoadedName, map[string]any{"reject_threshold": -5}, "reject_threshold"},
		{"critical negative", LeastLoadedName, map[string]any{"critical_threshold": -5}, "critical_threshold"},
		{"critical relative in (0,1)", LeastLoadedName, map[string]any{"critical_relative": 0.9}, "critical_relative"},
		{"critical relative above 10", LeastLoadedName, map[string]any{"critical_relative": 10.5}, "critical_relative"},
		{"unknown", LeastLoadedName, map[string]any{"dampenning": 0.5}, "dampenning"},
		{"md defaults", MinimumDispersionName, nil, ""},
		{"md tolerance", MinimumDispersionName, map[string]any{"tolerance": 0.5}, "tolerance"},
		{"md dampening", MinimumDispersionName, map[string]any{"dampening": 1}, "dampening"},
		{"md per-balance", MinimumDispersionName, map[string]any{"per_balance_load": "x"}, "per_balance_load"},
		{"md critical is not its parameter", MinimumDispersionName, map[string]any{"critical_relative": 1.1}, "critical_relative"},
		{"md min_gain off", MinimumDispersionName, map[string]any{"min_gain": 0}, ""},
		{"md min_gain 1", MinimumDispersionName, map[string]any{"min_gain": 1}, ""},
		{"md min_gain negative", MinimumDispersionName, map[string]any{"min_gain": -0.01}, "min_gain"},
		{"md min_gain above 1", MinimumDispersionName, map[string]any{"min_gain": 1.5}, "min_gain"},
		{"md min_gain a string", MinimumDispersionName, map[string]any{"min_gain": "some"}, "min_gain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(tt.strategy, tt.params, testEnv(1))
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if _, ok := s.(Adaptive); !ok {
					t.Fatalf("%s is not Adaptive", tt.strategy)
				}
				return
			}
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *ParamError", err)
			}
			if pe.Strategy != tt.strategy || pe.Field != tt.wantField {
				t.Errorf("error names %s.%s, want %s.%s (%v)", pe.Strategy, pe.Field, tt.strategy, tt.wantField, err)
			}
		})
	}
}

func TestAdaptiveDefaultsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, name := range []string{LeastLoadedName, MinimumDispersionName} {
		d, ok := Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		params := d.Defaults()
		if params["per_balance_load"] != "auto" {
			t.Errorf("%s: per_balance_load default %v, want \"auto\"", name, params["per_balance_load"])
		}
		// Through JSON and back, as a config file or the API would.
		raw, _ := json.Marshal(params)
		var back map[string]any
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		s, err := d.Build(back, testEnv(1))
		if err != nil {
			t.Fatalf("%s: defaults do not build: %v", name, err)
		}
		if got := s.(Adaptive).Dampening(); got != 0.5 {
			t.Errorf("%s: dampening %v, want 0.5", name, got)
		}
	}
}

func newLeastLoaded(t *testing.T, params map[string]any) Strategy {
	t.Helper()
	s, err := New(LeastLoadedName, params, testEnv(42))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLeastLoadedPickAmongNearTies(t *testing.T) {
	t.Parallel()
	s := newLeastLoaded(t, map[string]any{"per_balance_load": 0})
	rs := indexed(reported("a", 100, 0), reported("b", 104, 0), reported("c", 120, 0))
	p := s.Picker(rs)
	counts := map[string]int{}
	for range 10000 {
		r, err := p.Pick(&Request{})
		if err != nil {
			t.Fatal(err)
		}
		counts[r.ID]++
	}
	if counts["c"] != 0 {
		t.Errorf("c (20%% above the minimum) picked %d times", counts["c"])
	}
	if counts["a"] < 4500 || counts["b"] < 4500 {
		t.Errorf("near-ties not shared evenly: %v", counts)
	}
}

func TestLeastLoadedPerBalanceOnlyOnPicked(t *testing.T) {
	t.Parallel()
	s := newLeastLoaded(t, map[string]any{"per_balance_load": 10})
	rs := indexed(reported("a", 50, 0), reported("b", 100, 0))
	p := s.Picker(rs)
	r, err := p.Pick(&Request{})
	if err != nil || r.ID != "a" {
		t.Fatalf("picked %v, %v; want a", r, err)
	}
	if a, b := rs[0].Live.Extra(), rs[1].Live.Extra(); a != 10 || b != 0 {
		t.Errorf("extra a=%v b=%v, want 10 and 0", a, b)
	}
	// Five picks take a to 100 (tolerance 1.05: b becomes a candidate only
	// once a reaches 100/1.05); the extra does not compound.
	for range 5 {
		if _, err := p.Pick(&Request{}); err != nil {
			t.Fatal(err)
		}
	}
	if a := rs[0].Live.Extra(); a != 50 && a != 60 {
		t.Errorf("extra a=%v after six picks, want 50 or 60", a)
	}
	rs[0].Live.ResetExtra()
	if rs[0].Live.Extra() != 0 {
		t.Errorf("ResetExtra left %v", rs[0].Live.Extra())
	}
}

func TestLeastLoadedAutoPerBalance(t *testing.T) {
	t.Parallel()
	s := newLeastLoaded(t, nil)
	// 300 load over 12 listed clients: one binding is 25.
	rs := indexed(reported("a", 100, 4), reported("b", 100, 4), reported("c", 100, 4), reported("d", 0, 0))
	p := s.Picker(rs)
	if _, err := p.Pick(&Request{}); err != nil {
		t.Fatal(err)
	}
	if got := rs[3].Live.Extra(); got != 25 {
		t.Errorf("auto per-balance %v, want 25", got)
	}
	// No listed clients: a tenth of the mean replica load.
	rs = indexed(reported("a", 100, 0), reported("b", 300, 0))
	if _, err := s.Picker(rs).Pick(&Request{}); err != nil {
		t.Fatal(err)
	}
	if got := rs[0].Live.Extra(); got != 20 {
		t.Errorf("auto per-balance without clients %v, want 20", got)
	}
}

func TestLeastLoadedReject(t *testing.T) {
	t.Parallel()
	s := newLeastLoaded(t, map[string]any{"reject_threshold": 100, "per_balance_load": 0})
	p := s.Picker(indexed(reported("a", 150, 0), reported("b", 101, 0)))
	if _, err := p.Pick(&Request{}); !errors.Is(err, ErrNoReplica) {
		t.Errorf("every replica above the reject threshold: %v, want ErrNoReplica", err)
	}
	p = s.Picker(indexed(reported("a", 150, 0), reported("b", 99, 0)))
	if r, err := p.Pick(&Request{}); err != nil || r.ID != "b" {
		t.Errorf("picked %v, %v; want b", r, err)
	}
	if _, err := s.Picker(nil).Pick(&Request{}); !errors.Is(err, ErrNoReplica) {
		t.Errorf("empty snapshot: %v, want ErrNoReplica", err)
	}
}

func TestLeastLoadedWeights(t *testing.T) {
	t.Parallel()
	s := newLeastLoaded(t, map[string]any{"per_balance_load": 0})
	big := reported("big", 150, 0)
	big.Weight = 2
	// big carries 75 per unit of weight against small's 100.
	p := s.Picker(indexed(big, reported("small", 100, 0)))
	if r, _ := p.Pick(&Request{}); r.ID != "big" {
		t.Errorf("picked %s, want big", r.ID)
	}
}

func TestLeastLoadedPickAllocatesNothing(t *testing.T) {
	s := newLeastLoaded(t, nil)
	unreported := &Replica{ID: "u", Weight: 1, Metrics: NoMetrics, Live: new(Live)}
	snapshots := map[string][]*Replica{
		"reported":      indexed(reported("a", 100, 4), reported("b", 101, 4), reported("c", 90, 4), unreported),
		"none reported": indexed(&Replica{ID: "x", Weight: 1, Live: new(Live)}, &Replica{ID: "y", Weight: 2, Live: new(Live)}),
	}
	for name, rs := range snapshots {
		p := s.Picker(rs)
		req := &Request{Client: "c1"}
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := p.Pick(req); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: Pick allocates %v times", name, allocs)
		}
	}
}

// TestLeastLoadedPickConcurrent runs picks from many goroutines (under
// -race in CI): no lock, and no per-balance load lost.
func TestLeastLoadedPickConcurrent(t *testing.T) {
	t.Parallel()
	s := newLeastLoaded(t, map[string]any{"per_balance_load": 1})
	rs := indexed(reported("a", 100, 0), reported("b", 100, 0), reported("c", 100, 0))
	p := s.Picker(rs)
	const workers, picks = 8, 2000
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range picks {
				if _, err := p.Pick(&Request{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := 0.0
	for _, r := range rs {
		total += r.Live.Extra()
	}
	if total != workers*picks {
		t.Errorf("per-balance load %v, want %d", total, workers*picks)
	}
	for _, r := range rs {
		if math.Abs(r.Live.Extra()-workers*picks/3) > 0.1*workers*picks/3 {
			t.Errorf("%s got %v of the load: picks do not spread", r.ID, r.Live.Extra())
		}
	}
}

func state(id string, load float64, cs ...protocol.ClientRate) LoadState {
	sum := 0.0
	for _, c := range cs {
		sum += c.Rate
	}
	return LoadState{ID: id, Weight: 1, Reported: true, Load: load, Sample: load, Clients: cs}
}

func TestLeastLoadedAnalyze(t *testing.T) {
	t.Parallel()
	c := func(id string, rate float64) protocol.ClientRate { return protocol.ClientRate{ID: id, Rate: rate} }
	tests := []struct {
		name     string
		params   map[string]any
		replicas []LoadState
		wantHigh []string
		moves    int
	}{
		{
			name:     "balanced within 10%: nothing",
			replicas: []LoadState{state("a", 105, c("a1", 105)), state("b", 95, c("b1", 95))},
		},
		{
			name:     "relative critical: a plan",
			replicas: []LoadState{state("a", 200, c("a1", 100), c("a2", 100)), state("b", 0)},
			wantHigh: []string{"a"},
			moves:    1,
		},
		{
			name:     "relative off, absolute off (TAO's defaults): nothing",
			params:   map[string]any{"critical_relative": 0},
			replicas: []LoadState{state("a", 200, c("a1", 100), c("a2", 100)), state("b", 0)},
		},
		{
			name:     "absolute critical",
			params:   map[string]any{"critical_relative": 0, "critical_threshold": 150},
			replicas: []LoadState{state("a", 200, c("a1", 100), c("a2", 100)), state("b", 0)},
			wantHigh: []string{"a"},
			moves:    1,
		},
		{
			name:     "no client lists: shed the load above the mean",
			replicas: []LoadState{state("a", 300), state("b", 100)},
			wantHigh: []string{"a"},
		},
		{
			name: "unreported replicas are neither sources nor destinations",
			replicas: []LoadState{
				state("a", 200, c("a1", 100), c("a2", 100)),
				state("b", 100, c("b1", 100)),
				{ID: "u", Weight: 1},
			},
		},
		{
			name:     "nothing reported",
			replicas: []LoadState{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newLeastLoaded(t, tt.params).(Adaptive)
			d := s.Analyze(&Analysis{Replicas: tt.replicas})
			var high []string
			for _, a := range d.High {
				high = append(high, a.ID)
				if a.Shed <= 0 {
					t.Errorf("high for %s with shed %v", a.ID, a.Shed)
				}
			}
			if len(high) != len(tt.wantHigh) || (len(high) > 0 && high[0] != tt.wantHigh[0]) {
				t.Errorf("high %v, want %v", high, tt.wantHigh)
			}
			if len(d.Moves) != tt.moves {
				t.Errorf("moves %v, want %d", d.Moves, tt.moves)
			}
			if tt.name == "no client lists: shed the load above the mean" && d.High[0].Shed != 100 {
				t.Errorf("shed %v, want 100", d.High[0].Shed)
			}
		})
	}
}

func TestMinimumDispersionAnalyze(t *testing.T) {
	t.Parallel()
	s, err := New(MinimumDispersionName, nil, testEnv(1))
	if err != nil {
		t.Fatal(err)
	}
	c := func(id string, rate float64) protocol.ClientRate { return protocol.ClientRate{ID: id, Rate: rate} }
	// a and b at 150 are 12.5% above the mean of 133; c is the one far
	// below it: a client comes to c.
	d := s.(Adaptive).Analyze(&Analysis{Replicas: []LoadState{
		state("a", 150, c("a1", 100), c("a2", 50)),
		state("b", 150, c("b1", 100), c("b2", 50)),
		state("c", 100, c("c1", 50), c("c2", 50)),
	}})
	if len(d.Moves) != 0 {
		// 150,150,100 is the best reachable (the alternative moves a 50
		// to c: 100,150,150): nothing to gain.
		t.Errorf("moves %v on a group at its best", d.Moves)
	}
	d = s.(Adaptive).Analyze(&Analysis{Replicas: []LoadState{
		state("a", 150, c("a1", 100), c("a2", 50)),
		state("b", 150, c("b1", 100), c("b2", 50)),
		state("c", 150, c("c1", 100), c("c2", 50)),
		state("d", 0),
	}})
	toD := 0
	for _, m := range d.Moves {
		if m.To == "d" {
			toD++
		}
	}
	if toD == 0 {
		t.Errorf("an empty replica below the band got nothing: %v", d.Moves)
	}
}

func TestAutoLoadJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want AutoLoad
	}{
		{`"auto"`, AutoLoad{Auto: true}},
		{`12.5`, AutoLoad{Value: 12.5}},
		{`0`, AutoLoad{}},
	} {
		var a AutoLoad
		if err := json.Unmarshal([]byte(tt.in), &a); err != nil || a != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v", tt.in, a, err, tt.want)
		}
		out, _ := json.Marshal(a)
		if string(out) != tt.in {
			t.Errorf("%s: marshals back as %s", tt.in, out)
		}
	}
}
