package strategy

import (
	"encoding/json"
	"fmt"
	"math"
)

// The picker of the adaptive strategies (least-loaded, minimum-dispersion):
// TAO's LeastLoaded selection (the TAO paper's later form), by load per unit of
// weight.

// AutoLoad is a load amount parameter that is either a number (>= 0) or
// "auto", in which case the strategy estimates it. It is written as "auto"
// or as the number in JSON and YAML.
type AutoLoad struct {
	// Auto is true for "auto".
	Auto bool
	// Value is the amount when not Auto.
	Value float64
	// bad holds a string other than "auto", reported by validate.
	bad string
}

// MarshalJSON writes "auto" or the number.
func (a AutoLoad) MarshalJSON() ([]byte, error) {
	if a.Auto {
		return []byte(`"auto"`), nil
	}
	return json.Marshal(a.Value)
}

// UnmarshalJSON reads "auto" or a number. Other strings are kept for
// validate to reject with the parameter's name.
func (a *AutoLoad) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = AutoLoad{Auto: s == "auto"}
		if !a.Auto {
			a.bad = s
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*a = AutoLoad{Value: v}
	return nil
}

func (a AutoLoad) validate(strategy, field string) error {
	if a.bad != "" || (!a.Auto && !(a.Value >= 0 && !math.IsInf(a.Value, 1))) {
		var v any = a.Value
		if a.bad != "" {
			v = a.bad
		}
		return &ParamError{Strategy: strategy, Field: field, Value: v, Allowed: `must be "auto" or a number >= 0`}
	}
	return nil
}

// halfOpenParamIn returns a *ParamError unless lo <= v < hi.
func halfOpenParamIn(strategy, field string, v, lo, hi float64) error {
	if v >= lo && v < hi {
		return nil
	}
	return &ParamError{Strategy: strategy, Field: field, Value: v, Allowed: fmt.Sprintf("must be in [%v,%v)", lo, hi)}
}

// nonNegParam returns a *ParamError unless v is a finite number >= 0.
func nonNegParam(strategy, field string, v float64) error {
	if v >= 0 && !math.IsInf(v, 1) {
		return nil
	}
	return &ParamError{Strategy: strategy, Field: field, Value: v, Allowed: "must be a finite number >= 0 (0: off)"}
}

// autoPerBalanceShare is the share of the mean replica load taken as one
// binding's load when per_balance_load is "auto" and no report lists its
// clients: as if every replica served ten clients.
const autoPerBalanceShare = 0.1

// loadPickerConfig is what the adaptive strategies' picker is built with.
type loadPickerConfig struct {
	// tolerance: pick at random among replicas within this factor of the
	// least loaded (>= 1).
	tolerance float64
	// reject: replicas whose load per unit of weight is above it are not
	// picked (0: off).
	reject float64
	// perBalance: added to the picked replica's load until its next
	// report is published (see Live.ResetExtra).
	perBalance AutoLoad
}

// loadPicker picks the replica with the least effective load per unit of
// weight, (Load + Live.Extra()) / Weight, at random among those within
// tolerance of the minimum (which stops a thundering herd onto one
// replica), skipping replicas above the reject threshold, and adds the
// per-balance load to the replica it picks (only that one, until the step
// after its next report resets it, see Live.ResetExtra; TAO adds it to every replica and stores back
// tolerance-divided values, which compounds).
//
// A replica without a fresh report while others have one counts as
// carrying the mean load per unit of weight of the reported ones: its load
// is unknown, not zero, so it gets a fair share of near-ties rather than
// every binding (or none); the per-balance load it collects then holds it
// back until it reports. With no report at all the pick is random,
// weighted by capacity.
//
// Pick takes no lock and allocates nothing (the strategy's Env.Rand, by
// default NewRand's, is lock-free).
type loadPicker struct {
	replicas   []*Replica
	base       []float64 // load per replica; nil when nothing is reported
	inv        []float64 // 1/weight
	weightSum  float64
	tolerance  float64
	reject     float64
	perBalance float64
	rand       Rand
}

func newLoadPicker(replicas []*Replica, cfg loadPickerConfig, rand Rand) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	p := &loadPicker{
		replicas:  snapshotOf(replicas),
		inv:       make([]float64, len(replicas)),
		tolerance: cfg.tolerance,
		reject:    cfg.reject,
		rand:      rand,
	}
	var sumLoad, sumW float64
	reported, clients := 0, 0
	for i, r := range p.replicas {
		w := weightOf(r)
		p.inv[i] = 1 / w
		p.weightSum += w
		if r.Reported {
			sumLoad += max(0, r.Load)
			sumW += w
			reported++
			clients += max(0, r.Clients)
		}
	}
	if reported == 0 {
		return p
	}
	mean := sumLoad / sumW
	p.base = make([]float64, len(replicas))
	for i, r := range p.replicas {
		if r.Reported {
			p.base[i] = max(0, r.Load)
		} else {
			p.base[i] = mean * weightOf(r)
		}
	}
	switch {
	case !cfg.perBalance.Auto:
		p.perBalance = cfg.perBalance.Value
	case clients > 0:
		p.perBalance = sumLoad / float64(clients)
	default:
		p.perBalance = autoPerBalanceShare * sumLoad / float64(reported)
	}
	return p
}

func (p *loadPicker) Pick(*Request) (*Replica, error) {
	if p.base == nil {
		x := p.rand.Float64() * p.weightSum
		for i, r := range p.replicas {
			if x -= 1 / p.inv[i]; x < 0 {
				return r, nil
			}
		}
		return p.replicas[len(p.replicas)-1], nil
	}
	least, arg := math.Inf(1), -1
	for i := range p.replicas {
		if v, ok := p.value(i); ok && v < least {
			least, arg = v, i
		}
	}
	if arg < 0 {
		return nil, ErrNoReplica
	}
	limit := least * p.tolerance
	n := 0
	for i := range p.replicas {
		if v, ok := p.value(i); ok && v <= limit {
			n++
		}
	}
	chosen := arg
	if n > 1 {
		k := p.rand.IntN(n)
		for i := range p.replicas {
			if v, ok := p.value(i); ok && v <= limit {
				if k == 0 {
					chosen = i
					break
				}
				k--
			}
		}
	}
	r := p.replicas[chosen]
	if p.perBalance > 0 {
		r.Live.AddExtra(p.perBalance)
	}
	return r, nil
}

// value is replica i's load per unit of weight, and whether it may be
// picked (not above the reject threshold).
func (p *loadPicker) value(i int) (float64, bool) {
	v := (p.base[i] + p.replicas[i].Live.Extra()) * p.inv[i]
	return v, p.reject <= 0 || v <= p.reject
}
