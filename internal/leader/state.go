package leader

import "fmt"

// State is an instance's standing in one group's election.
type State int

// States of a group's election, as one instance sees it.
const (
	// Follower: not campaigning (before the first campaign, after a
	// resignation, or while the instance has no session). It plans
	// nothing and serves from its last view.
	Follower State = iota
	// Candidate: campaigning, in line behind the current leader (if any).
	Candidate
	// Leader: this instance won the election; its term is its election
	// key's create revision. It plans moves once warm (Core.CanPlan).
	Leader
	// Deposed: this instance was leader and lost it (its session ended,
	// or another leader was observed). It plans nothing until it
	// campaigns again.
	Deposed
)

func (s State) String() string {
	switch s {
	case Follower:
		return "follower"
	case Candidate:
		return "candidate"
	case Leader:
		return "leader"
	case Deposed:
		return "deposed"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// Change is one transition of a group's state on this instance.
type Change struct {
	Group    string
	From, To State
	// Term is the term won (To == Leader) or lost (From == Leader);
	// 0 otherwise.
	Term int64
	// Why names the event: "campaign", "elected", "session lost",
	// "newer leader", "key gone", "resigned".
	Why string
}

func (c Change) String() string {
	s := fmt.Sprintf("%s: %s -> %s (%s)", c.Group, c.From, c.To, c.Why)
	if c.Term != 0 {
		s += fmt.Sprintf(" term=%d", c.Term)
	}
	return s
}

// Observed is the leader of a group as the election's keys showed it at
// etcd revision Rev: the instance whose key was created first, and that
// key's create revision (its Term). Instance "" and Term 0: no leader
// (between leaders).
type Observed struct {
	Instance string
	Term     int64
	Rev      int64
}
