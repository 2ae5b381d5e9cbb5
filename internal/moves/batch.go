package moves

import (
	"fmt"
	"time"
)

// MaxTxnOps is etcd's default --max-txn-ops (128), the most operations
// one transaction may hold.
const MaxTxnOps = 128

// MovesPerTxn is the most moves Commit puts in one transaction: etcd
// counts the fence's outer transaction against the limit of the inner one
// (a nested transaction may hold MaxTxnOps less the outer one's
// operations), so one less than MaxTxnOps. A larger batch is split.
const MovesPerTxn = MaxTxnOps - 1

// MinLeaseTTL is the shortest lease Commit grants: etcd's lease TTLs are
// whole seconds, and etcd 3.4 makes shorter ones 2 s anyway.
const MinLeaseTTL = 2 * time.Second

// chunks splits s into consecutive parts of at most n elements (n > 0).
func chunks[T any](s []T, n int) [][]T {
	var out [][]T
	for len(s) > n {
		out = append(out, s[:n:n])
		s = s[n:]
	}
	if len(s) > 0 {
		out = append(out, s)
	}
	return out
}

// leaseTTL is the TTL of the lease for moves that must last life: two
// lives, rounded up to whole seconds, at least MinLeaseTTL. A lease is
// used while at least one life is left of it, so a key lives between one
// and two lives.
func leaseTTL(life time.Duration) time.Duration {
	ttl := (2*life + time.Second - 1).Truncate(time.Second)
	return max(ttl, MinLeaseTTL)
}

// checkMoves refuses a batch with an empty client or target, or a client
// twice (etcd refuses a transaction that writes one key twice).
func checkMoves(group string, life time.Duration, moves []Move) error {
	if group == "" {
		return fmt.Errorf("moves: group: empty, want the group's name")
	}
	if life <= 0 {
		return fmt.Errorf("moves: group %q: life %v: must be positive (the analyzer's move expiry)", group, life)
	}
	seen := make(map[string]int, len(moves))
	for i, m := range moves {
		if m.Client == "" {
			return fmt.Errorf("moves: group %q: moves[%d].client: empty, want the client's id", group, i)
		}
		if m.To == "" {
			return fmt.Errorf("moves: group %q: moves[%d].to: empty, want a replica id (client %q)", group, i, m.Client)
		}
		if j, dup := seen[m.Client]; dup {
			return fmt.Errorf("moves: group %q: moves[%d].client %q: already moves[%d], want each client once", group, i, m.Client, j)
		}
		seen[m.Client] = i
	}
	return nil
}

// committed is what a Store remembers of a move it wrote.
type committed struct {
	to   string
	term int64
	end  time.Time // when its lease ends at the earliest
}

// ledger is what a Store committed, by group and client, so that Commit
// writes only what changed. Not safe for concurrent use.
type ledger map[string]map[string]committed

// due returns the moves of group to write at now in term: those not
// committed in term with the same target on a lease that has not ended.
// It forgets the group's clients that are not in moves (their moves were
// completed or dropped).
func (l ledger) due(group string, term int64, moves []Move, now time.Time) []Move {
	g := l[group]
	var out []Move
	in := make(map[string]bool, len(moves))
	for _, m := range moves {
		in[m.Client] = true
		if c, ok := g[m.Client]; ok && c.to == m.To && c.term == term && now.Before(c.end) {
			continue
		}
		out = append(out, m)
	}
	for client := range g {
		if !in[client] {
			delete(g, client)
		}
	}
	if len(g) == 0 {
		delete(l, group)
	}
	return out
}

// record notes moves as committed in term on a lease that ends at end.
func (l ledger) record(group string, term int64, moves []Move, end time.Time) {
	g := l[group]
	if g == nil {
		g = make(map[string]committed, len(moves))
		l[group] = g
	}
	for _, m := range moves {
		g[m.Client] = committed{to: m.To, term: term, end: end}
	}
}

// forget drops client's move in group.
func (l ledger) forget(group, client string) {
	if g := l[group]; g != nil {
		delete(g, client)
		if len(g) == 0 {
			delete(l, group)
		}
	}
}
