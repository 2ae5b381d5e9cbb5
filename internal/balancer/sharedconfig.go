package balancer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// applyShared is ApplyConfig and Reload with Options.SharedConfig: each
// group the file declares is created when the store has none of that
// name, and otherwise left as stored, a difference logged as a warning
// naming the fields. No group is changed or deleted. The file is checked
// whole before anything is created; start tells whether the new groups'
// front doors start at once (a reload) or at Start.
//
// Each declared group's front_door is this instance's own: its front door
// listens there (cluster.go), whatever the stored group says, so
// front_door (and an advertise derived from it) is not a difference. A
// reload moves the front doors whose declared address changed, and those
// of groups the file no longer declares to their stored front_door.
func (b *Balancer) applyShared(groups []protocol.Group, start bool) (ReloadResult, error) {
	var (
		problems []error
		apply    []protocol.Group
	)
	for _, gs := range groups {
		gs = registry.WithDefaults(gs)
		gs.Source = protocol.SourceConfig
		if err := registry.Validate(gs); err != nil {
			problems = append(problems, fmt.Errorf("group %s: %w", gs.Name, err))
			continue
		}
		if err := b.checkGroupLoops(gs, start); err != nil {
			problems = append(problems, fmt.Errorf("group %s: %w", gs.Name, err))
			continue
		}
		if start {
			if _, err := replicaTLSClient(gs); err != nil {
				problems = append(problems, fmt.Errorf("group %s: %w", gs.Name, err))
				continue
			}
			if err := CheckTLS(gs); err != nil {
				problems = append(problems, fmt.Errorf("group %s: %w", gs.Name, err))
				continue
			}
		}
		apply = append(apply, gs)
	}
	if len(problems) > 0 {
		return ReloadResult{}, &ReloadError{Problems: problems}
	}
	if err := b.StoreUnreachable(); err != nil {
		return ReloadResult{}, err // degraded.go: every group is read from the store
	}
	doors := make(map[string]string, len(apply))
	for _, gs := range apply {
		doors[gs.Name] = gs.FrontDoor
	}
	b.setLocalDoors(doors)
	var (
		res    ReloadResult
		failed []error
	)
	for _, gs := range apply {
		old, err := b.reg.GetGroup(gs.Name)
		switch {
		case err == nil:
			if fields := differingFields(registry.WithDefaults(old), ownFrontDoor(registry.WithDefaults(old), gs)); len(fields) > 0 {
				b.log.Warn("group declared in the config file differs from the stored one; the stored one is kept (change it through the API)", "group", gs.Name, "fields", fields)
			}
			continue
		case !errors.Is(err, store.ErrNotFound):
			failed = append(failed, fmt.Errorf("group %s: %w", gs.Name, err))
			continue
		}
		b.adminMu.Lock()
		_, _, err = b.putGroupLocked(gs, start, Match{None: true})
		b.adminMu.Unlock()
		var re *RevisionError
		switch {
		case errors.As(err, &re):
			b.log.Info("group declared in the config file was created meanwhile by another writer; it is kept", "group", gs.Name)
		case err != nil:
			failed = append(failed, fmt.Errorf("group %s: %w", gs.Name, err))
		default:
			b.log.Info("group declared in the config file created", "group", gs.Name)
			res.Added = append(res.Added, gs.Name)
		}
	}
	if start {
		failed = append(failed, b.relocateAll()...)
		b.dropLoopingReplicas() // a front door on port 0 may have got a replica's port
	}
	sort.Strings(res.Added)
	if len(failed) > 0 {
		return res, fmt.Errorf("balancer: config applied in part: %w", errors.Join(failed...))
	}
	return res, nil
}

// ownFrontDoor is declared with stored's front_door, and stored's
// advertise when both derive theirs from their front_door: those are this
// instance's own, not differences from the stored group.
func ownFrontDoor(stored, declared protocol.Group) protocol.Group {
	if declared.Advertise == registry.GroupAdvertise(declared, declared.FrontDoor) && stored.Advertise == registry.GroupAdvertise(stored, stored.FrontDoor) {
		declared.Advertise = stored.Advertise
	}
	declared.FrontDoor = stored.FrontDoor
	return declared
}

// differingFields returns, sorted, the top-level fields (as named in the
// API's JSON) whose values differ between stored and declared; Source is
// not compared. Both are compared in their JSON form, so that YAML's 1
// and JSON's 1.0 are equal.
func differingFields(stored, declared protocol.Group) []string {
	stored.Source, declared.Source = "", ""
	a, errA := jsonFields(stored)
	d, errD := jsonFields(declared)
	if errA != nil || errD != nil {
		return []string{"(not comparable)"}
	}
	var out []string
	for k, v := range a {
		if string(d[k]) != string(v) {
			out = append(out, k)
		}
	}
	for k := range d {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// jsonFields is g's JSON object, field by field.
func jsonFields(g protocol.Group) (map[string]json.RawMessage, error) {
	j, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	err = json.Unmarshal(j, &m)
	return m, err
}
