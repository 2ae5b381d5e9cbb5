package balancer

import (
	"fmt"
	"sort"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// runningGroup is what planReload knows of a running group.
type runningGroup struct {
	spec       protocol.Group
	fromConfig bool
}

// stepKind says why a reload applies a declared group, which decides what
// it logs.
type stepKind int

const (
	// stepAdd creates a group that does not run.
	stepAdd stepKind = iota
	// stepFileChange applies a config group the file changed.
	stepFileChange
	// stepRevert reverts a group changed through the API (or created
	// there with other settings): the warning of the start.
	stepRevert
	// stepTakeOver takes over an API group whose settings are the file's.
	stepTakeOver
)

// reloadStep is one declared group a reload applies.
type reloadStep struct {
	gs   protocol.Group // defaulted, Source config
	kind stepKind
}

// reloadPlan is what a reload does, before the running balancer is
// checked and the listeners bound.
type reloadPlan struct {
	// apply are the groups to create or change, in file order.
	apply []reloadStep
	// removed are the config groups no longer declared, sorted.
	removed []string
	// declared are the names the file declares.
	declared map[string]bool
	// problems are the declared groups that are not valid.
	problems []error
}

// planReload decides what a reload of the groups in file does to the
// running groups, given the settings the file last declared for each
// (last). A declared group equal to the running config group is left out;
// config groups no longer declared are removed; API groups not declared
// are left alone. It does no I/O.
func planReload(running map[string]runningGroup, last map[string]protocol.Group, file []protocol.Group) reloadPlan {
	p := reloadPlan{declared: map[string]bool{}}
	for _, gs := range file {
		gs = registry.WithDefaults(gs)
		gs.Source = protocol.SourceConfig
		p.declared[gs.Name] = true
		if err := registry.Validate(gs); err != nil {
			p.problems = append(p.problems, fmt.Errorf("group %s: %w", gs.Name, err))
			continue
		}
		r, ok := running[gs.Name]
		prev, wasDeclared := last[gs.Name]
		step := reloadStep{gs: gs}
		switch same := ok && sameSettings(r.spec, gs); {
		case !ok:
			step.kind = stepAdd
		case r.fromConfig && same:
			continue // not touched
		case !r.fromConfig && same:
			step.kind = stepTakeOver
		case r.fromConfig && wasDeclared && sameSettings(r.spec, prev):
			step.kind = stepFileChange
		default:
			step.kind = stepRevert
		}
		p.apply = append(p.apply, step)
	}
	for name, r := range running {
		if r.fromConfig && !p.declared[name] {
			p.removed = append(p.removed, name)
		}
	}
	sort.Strings(p.removed)
	return p
}
