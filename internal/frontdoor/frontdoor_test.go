package frontdoor

import (
	"errors"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// always picks the eligible member at index i, whatever the call.
type always struct {
	s *Snapshot
	i int
}

func (a always) Pick(*strategy.Request) (*strategy.Replica, error) {
	return a.s.Eligible[a.i].Replica, nil
}

type none struct{}

func (none) Pick(*strategy.Request) (*strategy.Replica, error) { return nil, strategy.ErrNoReplica }

// snapshot returns a snapshot of n active members whose picker always
// chooses member 0, with at most limit calls in flight per member.
func snapshot(n, limit int) *Snapshot {
	s := &Snapshot{MaxInflight: limit, Members: map[string]*Member{}}
	for i := range n {
		id := string(rune('a' + i))
		m := &Member{Replica: &strategy.Replica{Index: i, ID: id, Weight: 1, Live: &strategy.Live{}},
			State: protocol.StateActive, Counters: &Counters{}}
		s.Eligible = append(s.Eligible, m)
		s.Members[id] = m
	}
	s.Picker = always{s: s, i: 0}
	return s
}

func inflight(s *Snapshot) []int64 {
	var out []int64
	for _, m := range s.Eligible {
		out = append(out, m.Replica.Live.Inflight.Load())
	}
	return out
}

func TestAcquireTakesThePickAndCountsIt(t *testing.T) {
	s := snapshot(3, 0)
	m, err := s.Acquire(&strategy.Request{}, nil, 0)
	if err != nil || m != s.Eligible[0] {
		t.Fatalf("Acquire = %v, %v; want member a", m, err)
	}
	if got := inflight(s); got[0] != 1 || got[1] != 0 || got[2] != 0 {
		t.Fatalf("in flight %v, want [1 0 0]", got)
	}
	m.Release()
	if got := inflight(s); got[0] != 0 {
		t.Fatalf("in flight after Release %v, want 0 on a", got)
	}
}

// When the strategy's choice is full, the overflow spreads over the others
// from a rotating start instead of all landing on the next member.
func TestAcquireSpillsRoundTheFullPick(t *testing.T) {
	s := snapshot(4, 1)
	if _, err := s.Acquire(&strategy.Request{}, nil, 0); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for spill := uint32(1); spill <= 3; spill++ {
		m, err := s.Acquire(&strategy.Request{}, nil, spill)
		if err != nil {
			t.Fatalf("spill %d: %v", spill, err)
		}
		got[m.ID()]++
		m.Release()
	}
	if got["b"] != 1 || got["c"] != 1 || got["d"] != 1 {
		t.Fatalf("spilled calls went to %v, want one each to b, c and d", got)
	}
}

func TestAcquireOverloadedWhenEveryMemberIsFull(t *testing.T) {
	s := snapshot(2, 1)
	for range 2 {
		if _, err := s.Acquire(&strategy.Request{}, nil, 7); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := s.Acquire(&strategy.Request{}, nil, 7); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("Acquire = %v, %v; want ErrOverloaded", m, err)
	}
	if got := inflight(s); got[0] != 1 || got[1] != 1 {
		t.Fatalf("in flight %v after a refused call, want [1 1]", got)
	}
}

// A member excluded by an earlier snapshot's Member of the same replica is
// excluded too; with every member excluded there is no replica.
func TestAcquireExcludesByReplicaID(t *testing.T) {
	s := snapshot(2, 0)
	old := *s.Eligible[0] // the same replica in an earlier snapshot
	m, err := s.Acquire(&strategy.Request{}, []*Member{&old}, 0)
	if err != nil || m.ID() != "b" {
		t.Fatalf("Acquire = %v, %v; want b", m, err)
	}
	m.Release()
	if m, err := s.Acquire(&strategy.Request{}, []*Member{&old, s.Eligible[1]}, 0); !errors.Is(err, ErrNoReplica) {
		t.Fatalf("Acquire = %v, %v; want ErrNoReplica", m, err)
	}
}

func TestAcquireSkipsInactiveMembersAndPassesPickerErrors(t *testing.T) {
	s := snapshot(3, 1)
	s.Eligible[1].State = protocol.StateDraining
	if _, err := s.Acquire(&strategy.Request{}, nil, 0); err != nil {
		t.Fatal(err)
	}
	m, err := s.Acquire(&strategy.Request{}, nil, 0)
	if err != nil || m.ID() != "c" {
		t.Fatalf("Acquire = %v, %v; want c (a full, b draining)", m, err)
	}
	s.Picker = none{}
	if _, err := s.Acquire(&strategy.Request{}, nil, 0); !errors.Is(err, ErrNoReplica) {
		t.Fatalf("Acquire with a failing picker: %v, want ErrNoReplica", err)
	}
}
