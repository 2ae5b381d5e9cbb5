package strategy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Definition describes a registered strategy.
type Definition struct {
	// Name is the strategy's registered name.
	Name string
	// Summary is a one-line description for --help and the API.
	Summary string
	// Build validates params (nil or empty means defaults) and returns the
	// strategy. Errors name the strategy, field, value and allowed range.
	Build func(params map[string]any, env Env) (Strategy, error)
	// Defaults returns the default parameters, as they would appear in a
	// config file.
	Defaults func() map[string]any
}

var (
	regMu sync.RWMutex
	reg   = map[string]Definition{}
)

// Register adds a strategy definition. It panics on an empty or duplicate
// name: both are programming errors caught at start-up.
func Register(d Definition) {
	regMu.Lock()
	defer regMu.Unlock()
	if d.Name == "" || d.Build == nil || d.Defaults == nil {
		panic("strategy: Register with incomplete definition " + d.Name)
	}
	if _, dup := reg[d.Name]; dup {
		panic("strategy: Register called twice for " + d.Name)
	}
	reg[d.Name] = d
}

// Lookup returns the definition registered under name.
func Lookup(name string) (Definition, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	d, ok := reg[name]
	return d, ok
}

// Names returns the registered names, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(reg))
	for n := range reg {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrUnknown is wrapped by New for a name that is not registered.
var ErrUnknown = errors.New("strategy: unknown strategy")

// New builds the named strategy with params.
func New(name string, params map[string]any, env Env) (Strategy, error) {
	d, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q, must be one of: %s", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	return d.Build(params, env.withDefaults())
}

func (e Env) withDefaults() Env {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Rand == nil {
		e.Rand = NewRand(uint64(time.Now().UnixNano()))
	}
	return e
}

// NewRand returns a Rand safe for concurrent use, seeded with seed. It is
// lock-free: each draw advances an atomic counter and mixes it with the
// SplitMix64 finaliser (Steele, Lea, Flood: "Fast splittable pseudorandom
// number generators", OOPSLA 2014), so strategies that draw on the hot path
// never contend on a lock.
func NewRand(seed uint64) Rand {
	r := &splitMix{}
	r.state.Store(seed)
	return r
}

type splitMix struct{ state atomic.Uint64 }

func (r *splitMix) next() uint64 {
	z := r.state.Add(0x9e3779b97f4a7c15)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// IntN maps a 64-bit draw onto [0,n) by multiplication (Lemire), whose bias
// is below n/2^64.
func (r *splitMix) IntN(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

func (r *splitMix) Float64() float64 { return float64(r.next()>>11) / (1 << 53) }

// ParamError is a strategy parameter validation failure.
type ParamError struct {
	Strategy string
	Field    string
	Value    any
	Allowed  string
	// Unknown marks a parameter the strategy does not have; Value is then
	// unused and Allowed is UnknownParamAllowed's list.
	Unknown bool
}

func (e *ParamError) Error() string {
	if e.Unknown {
		return fmt.Sprintf("%s: %s: unknown key, %s", e.Strategy, e.Field, e.Allowed)
	}
	return fmt.Sprintf("%s: %s %v, %s", e.Strategy, e.Field, e.Value, e.Allowed)
}

// UnknownParamAllowed is what to say about a parameter strategy does not
// have, given the parameters it has: "allowed keys of least-loaded: a, b"
// or "round-robin takes no parameters". The config file and the admin API
// both say it, so the two read the same.
func UnknownParamAllowed(strategy string, known []string) string {
	if len(known) == 0 {
		return strategy + " takes no parameters"
	}
	known = slices.Clone(known)
	slices.Sort(known)
	return "allowed keys of " + strategy + ": " + strings.Join(known, ", ")
}

// DecodeParams fills cfg (a pointer to a struct with json tags, already set
// to its defaults) from params. Unknown keys and values of the wrong type
// are ParamErrors naming strategy and field. Durations are Go duration
// strings when the field's type is protocol.Duration.
func DecodeParams(strategy string, params map[string]any, cfg any) error {
	if len(params) == 0 {
		return nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return &ParamError{Strategy: strategy, Field: "params", Value: params, Allowed: "must be a JSON object of scalars"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &ParamError{Strategy: strategy, Field: te.Field, Value: te.Value, Allowed: "must be of type " + te.Type.String()}
		}
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			known := slices.Collect(maps.Keys(ToParams(cfg)))
			return &ParamError{Strategy: strategy, Field: strings.Trim(f, `"`), Unknown: true, Allowed: UnknownParamAllowed(strategy, known)}
		}
		return &ParamError{Strategy: strategy, Field: "params", Value: msg, Allowed: "must be valid parameters"}
	}
	return nil
}

// ToParams turns a config struct into the params map form (for Defaults).
func ToParams(cfg any) map[string]any {
	raw, err := json.Marshal(cfg)
	if err != nil {
		panic("strategy: ToParams: " + err.Error())
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		panic("strategy: ToParams: " + err.Error())
	}
	return m
}
