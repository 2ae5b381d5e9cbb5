package balancer

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// ReloadResult says what a reload changed: the names of the groups
// created, changed (settings reverted to the file's, or an API group of a
// declared name taken over) and deleted, each sorted.
type ReloadResult struct {
	Added, Changed, Removed []string
}

// ReloadError is a reload that was refused: nothing changed. Problems
// holds every reason, each naming its group.
type ReloadError struct {
	Problems []error
}

func (e *ReloadError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return "balancer: reload refused: " + strings.Join(msgs, "; ")
}

func (e *ReloadError) Unwrap() []error { return e.Problems }

// prebound is a front door listener bound by a reload before it changes
// anything, for the group that takes it when the reload commits.
type prebound struct {
	addr string
	ln   net.Listener
}

// takePrebound returns (and forgets) the listener a reload bound for
// group name at addr, or nil.
func (b *Balancer) takePrebound(name, addr string) net.Listener {
	b.preMu.Lock()
	defer b.preMu.Unlock()
	p, ok := b.prebound[name]
	if !ok || p.addr != addr {
		return nil
	}
	delete(b.prebound, name)
	return p.ln
}

// Reload applies the groups declared in a config file read again, to the
// running balancer, by the rules of the start (ApplyConfig) and a few
// more:
//
//   - a declared group equal to the running one is not touched: no
//     strategy rebuild, no probe restart;
//   - a declared group changed through the API is reverted, and a
//     declared name held by an API group is taken over, both with the
//     warning of the start;
//   - config groups no longer declared are deleted; other API groups are
//     untouched;
//   - everything is checked against the running balancer, and the
//     listeners of new front doors are bound, before anything changes: on
//     any problem nothing changes and the error is a *ReloadError with
//     every problem.
//
// A front door whose address is held by a group this reload deletes or
// moves is bound when that group has let go of it. Reloads are
// serialised.
//
// With Options.SharedConfig none of the above: the file's groups absent
// from the store are created (and their front doors started), the others
// are left as stored, a difference logged as a warning naming the fields;
// nothing is deleted (sharedconfig.go).
func (b *Balancer) Reload(groups []protocol.Group) (ReloadResult, error) {
	b.reloadMu.Lock()
	defer b.reloadMu.Unlock()
	if b.opts.SharedConfig {
		b.mu.RLock()
		closed := b.closed
		b.mu.RUnlock()
		if closed {
			return ReloadResult{}, ErrClosed
		}
		return b.applyShared(groups, true)
	}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return ReloadResult{}, ErrClosed
	}
	running := make(map[string]*group, len(b.groups))
	for n, g := range b.groups {
		running[n] = g
	}
	b.mu.RUnlock()

	views := make(map[string]runningGroup, len(running))
	for n, g := range running {
		g.mu.Lock()
		views[n] = runningGroup{spec: g.spec, fromConfig: g.fromConfig.Load()}
		g.mu.Unlock()
	}
	plan := planReload(views, b.declared, groups)
	problems := plan.problems
	var (
		res   ReloadResult
		steps []reloadStep
		apply []protocol.Group
	)
	for _, st := range plan.apply {
		if err := b.checkGroupLoops(st.gs, true); err != nil {
			problems = append(problems, fmt.Errorf("group %s: %w", st.gs.Name, err))
			continue
		}
		if _, err := replicaTLSClient(st.gs); err != nil {
			problems = append(problems, fmt.Errorf("group %s: %w", st.gs.Name, err))
			continue
		}
		if err := CheckTLS(st.gs); err != nil {
			problems = append(problems, fmt.Errorf("group %s: %w", st.gs.Name, err))
			continue
		}
		if st.kind == stepAdd {
			res.Added = append(res.Added, st.gs.Name)
		} else {
			res.Changed = append(res.Changed, st.gs.Name)
		}
		steps = append(steps, st)
		apply = append(apply, st.gs)
	}
	res.Removed = plan.removed
	declared := plan.declared

	bound, bindProblems := b.bindAhead(apply, running, declared)
	// A front door bound later takes an address another group lets go of
	// in this reload: it goes after the others.
	sort.SliceStable(steps, func(i, j int) bool {
		_, bi := bound[steps[i].gs.Name]
		_, bj := bound[steps[j].gs.Name]
		return laterBound(steps[i].gs, running, bi) < laterBound(steps[j].gs, running, bj)
	})
	problems = append(problems, bindProblems...)
	if len(problems) > 0 {
		for _, p := range bound {
			_ = p.ln.Close()
		}
		return ReloadResult{}, &ReloadError{Problems: problems}
	}

	// Commit.
	b.preMu.Lock()
	b.prebound = bound
	b.preMu.Unlock()
	defer func() {
		b.preMu.Lock()
		for _, p := range b.prebound {
			_ = p.ln.Close()
		}
		b.prebound = nil
		b.preMu.Unlock()
	}()
	var failed []error
	for _, name := range res.Removed {
		b.log.Warn("group is no longer declared in the config file; deleting it", "group", name)
		if err := b.deleteGroup(name); err != nil {
			failed = append(failed, fmt.Errorf("group %s: %w", name, err))
		}
		delete(b.declared, name)
	}
	for _, st := range steps {
		switch st.kind {
		case stepRevert:
			b.log.Warn("group is declared in the config file; reverting run-time changes", "group", st.gs.Name)
		case stepTakeOver:
			b.log.Info("group is declared in the config file; it was created through the API, the config file now owns it", "group", st.gs.Name)
		case stepFileChange:
			b.log.Info("group changed in the config file", "group", st.gs.Name)
		}
		if _, _, err := b.putGroup(st.gs, true); err != nil {
			failed = append(failed, fmt.Errorf("group %s: %w", st.gs.Name, err))
			continue
		}
		b.declared[st.gs.Name] = st.gs
	}
	b.dropLoopingReplicas() // a front door on port 0 may have got a replica's port
	sort.Strings(res.Added)
	sort.Strings(res.Changed)
	if len(failed) > 0 {
		// Checked and bound beforehand, so only the store can fail here.
		return res, fmt.Errorf("balancer: reload applied in part: %w", errors.Join(failed...))
	}
	return res, nil
}

// laterBound is 1 for a step whose front door is bound when another group
// has let go of its address (neither bound ahead nor staying), else 0.
func laterBound(gs protocol.Group, running map[string]*group, bound bool) int {
	if bound {
		return 0
	}
	if g := running[gs.Name]; g != nil {
		g.mu.Lock()
		stays := g.ln != nil && g.listenOn == gs.FrontDoor
		g.mu.Unlock()
		if stays {
			return 0
		}
	}
	return 1
}

// bindAhead binds the listener of every front door in apply that is new
// or moves, before anything changes. An address held now by a group that
// the reload deletes, or moves elsewhere, is left to be bound when that
// group lets go of it; one held by a group that stays is a problem.
func (b *Balancer) bindAhead(apply []protocol.Group, running map[string]*group, declared map[string]bool) (map[string]prebound, []error) {
	type holder struct {
		name   string
		leaves bool
	}
	moving := map[string]string{} // group → its new front door
	for _, gs := range apply {
		moving[gs.Name] = gs.FrontDoor
	}
	var held []struct {
		addr string
		holder
	}
	for name, g := range running {
		g.mu.Lock()
		if g.ln != nil {
			to, moves := moving[name]
			leaves := (g.fromConfig.Load() && !declared[name]) || (moves && to != g.listenOn)
			for _, a := range []string{g.listenOn, g.ln.Addr().String()} {
				held = append(held, struct {
					addr string
					holder
				}{a, holder{name, leaves}})
			}
		}
		g.mu.Unlock()
	}
	out := map[string]prebound{}
	var problems []error
next:
	for _, gs := range apply {
		if g := running[gs.Name]; g != nil {
			g.mu.Lock()
			stays := g.ln != nil && g.listenOn == gs.FrontDoor
			g.mu.Unlock()
			if stays {
				continue
			}
		}
		if _, port, err := net.SplitHostPort(gs.FrontDoor); err != nil || port != "0" {
			for _, h := range held {
				if h.name == gs.Name || h.addr != gs.FrontDoor {
					continue
				}
				if h.leaves {
					continue next // bound once h lets go
				}
				problems = append(problems, fmt.Errorf("group %s: front_door %s: %w: the front door of group %q listens there", gs.Name, gs.FrontDoor, ErrFrontDoor, h.name))
				continue next
			}
		}
		ln, err := b.opts.Listen("tcp", gs.FrontDoor)
		if err != nil {
			problems = append(problems, fmt.Errorf("group %s: front_door %s: %w: %v", gs.Name, gs.FrontDoor, ErrFrontDoor, err))
			continue
		}
		out[gs.Name] = prebound{addr: gs.FrontDoor, ln: ln}
	}
	return out, problems
}
