package groupcore_test

import (
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/internal/groupcore"
)

// TestLifecycle drives a replica's lifecycle through event sequences and
// checks the one state, the store's flags and the changes reported.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	const (
		active   = analyzer.StateActive
		draining = analyzer.StateDraining
		ejected  = analyzer.StateEjected
		down     = analyzer.StateDown
	)
	type step struct {
		ev      groupcore.Event
		state   string
		changed bool
	}
	tests := []struct {
		name               string
		start              groupcore.Lifecycle
		steps              []step
		draining, removing bool
	}{
		{name: "registered is active", steps: nil},
		{name: "health down then up", steps: []step{
			{groupcore.HealthDown, down, true}, {groupcore.HealthDown, down, false}, {groupcore.HealthUp, active, true},
		}},
		{name: "down wins over ejected and drained", steps: []step{
			{groupcore.Drain, draining, true}, {groupcore.Ejected, ejected, true}, {groupcore.HealthDown, down, true},
			{groupcore.HealthUp, ejected, true}, {groupcore.Readmitted, draining, true},
		}, draining: true},
		{name: "activate undoes drain", steps: []step{
			{groupcore.Drain, draining, true}, {groupcore.Drain, draining, false}, {groupcore.Activate, active, true},
		}},
		{name: "remove drains; activate undoes it", steps: []step{
			{groupcore.Remove, draining, true}, {groupcore.Remove, draining, false}, {groupcore.Drain, draining, false},
			{groupcore.Activate, active, true},
		}},
		{name: "drained then removed", steps: []step{
			{groupcore.Drain, draining, true}, {groupcore.Remove, draining, true},
		}, draining: true, removing: true},
		{name: "health does not touch the operator's drain", steps: []step{
			{groupcore.Remove, draining, true}, {groupcore.HealthDown, down, true}, {groupcore.HealthUp, draining, true},
		}, draining: true, removing: true},
		{name: "restored removing", start: groupcore.Restored(false, true, time.Unix(5, 0)),
			steps: []step{{groupcore.Drain, draining, false}}, draining: true, removing: true},
		{name: "restored draining", start: groupcore.Restored(true, false, time.Unix(5, 0)),
			steps: []step{{groupcore.Ejected, ejected, true}}, draining: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := tt.start
			now := time.Unix(10, 0)
			for i, s := range tt.steps {
				var changed bool
				l, changed = l.Apply(s.ev, now)
				if l.State() != s.state || changed != s.changed {
					t.Fatalf("step %d (%s): state %s changed %v, want %s %v", i, s.ev, l.State(), changed, s.state, s.changed)
				}
			}
			if len(tt.steps) == 0 && l.State() != active {
				t.Errorf("state %s, want active", l.State())
			}
			if l.Draining() != tt.draining || l.Removing() != tt.removing {
				t.Errorf("flags draining %v removing %v, want %v %v", l.Draining(), l.Removing(), tt.draining, tt.removing)
			}
		})
	}
}
