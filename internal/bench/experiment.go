package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/spf13/pflag"
)

// Experiment is one of the papers' experiments.
type Experiment interface {
	// Name is the experiment's name on the command line.
	Name() string
	// Summary is one line for the command's help.
	Summary() string
	// Run runs the experiment in env and returns its results. It may
	// write CSV files and plots into env.Dir; Run (the package function)
	// writes results.json and report.md from what it returns. An error
	// means the experiment could not run; targets it missed are not
	// errors.
	Run(ctx context.Context, env *Env) (*Results, error)
}

// FlagAdder is implemented by experiments that take flags of their own
// (effectiveness's --rates, scalability's --callers, ...). AddFlags binds
// them to the experiment's fields; it is called once, on a fresh value.
type FlagAdder interface {
	AddFlags(fs *pflag.FlagSet)
}

// Checker is implemented by experiments whose flags need checking: Check
// reports a flag value the experiment cannot run with, before anything
// starts (the command line exits 2).
type Checker interface {
	Check(size Size) error
}

var (
	experimentsMu sync.Mutex
	experiments   = map[string]func() Experiment{}
)

// Register makes an experiment available by name. newExp returns a fresh
// value, so that flags bound to one do not leak into another run. It
// panics when the name is taken or empty: two experiments with one name
// is a programming error.
func Register(name string, newExp func() Experiment) {
	experimentsMu.Lock()
	defer experimentsMu.Unlock()
	if name == "" || name == "all" {
		panic(fmt.Sprintf("bench: invalid experiment name %q", name))
	}
	if _, dup := experiments[name]; dup {
		panic("bench: experiment " + name + " registered twice")
	}
	experiments[name] = newExp
}

// New returns a fresh value of the experiment registered as name.
func New(name string) (Experiment, bool) {
	experimentsMu.Lock()
	newExp, ok := experiments[name]
	experimentsMu.Unlock()
	if !ok {
		return nil, false
	}
	return newExp(), true
}

// Names lists the registered experiments in the order "bench all" runs
// them: the papers' order (overhead, effectiveness, scalability), then any
// others by name.
func Names() []string {
	experimentsMu.Lock()
	names := make([]string, 0, len(experiments))
	for n := range experiments {
		names = append(names, n)
	}
	experimentsMu.Unlock()
	order := map[string]int{"overhead": 0, "effectiveness": 1, "scalability": 2}
	slices.SortFunc(names, func(a, b string) int {
		oa, okA := order[a]
		ob, okB := order[b]
		switch {
		case okA && okB:
			return oa - ob
		case okA:
			return -1
		case okB:
			return 1
		}
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
		return 0
	})
	return names
}

// OnTestbed is implemented by experiments that run on the testbed (root,
// network namespaces, cgroups) and take long even at --quick (albl,
// remoting): "bench all" runs them only when asked (AllNames).
type OnTestbed interface {
	OnTestbed() bool
}

// ByNameOnly is implemented by experiments that "bench all" leaves out,
// since they need more than the machine and its loopback (cluster: an etcd
// installed); they run when named.
type ByNameOnly interface {
	ByNameOnly() bool
}

// AllNames lists what "bench all" runs, in Names' order: every experiment
// on loopback (but those run by name only) and, with testbed, the testbed
// ones too.
func AllNames(testbed bool) []string {
	var out []string
	for _, n := range Names() {
		exp, _ := New(n)
		if t, ok := exp.(OnTestbed); ok && t.OnTestbed() && !testbed {
			continue
		}
		if b, ok := exp.(ByNameOnly); ok && b.ByNameOnly() {
			continue
		}
		out = append(out, n)
	}
	return out
}
