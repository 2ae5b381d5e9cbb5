package migrate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// ErrRefused is wrapped by a Plan's Refusal: the copy must not run.
var ErrRefused = errors.New("migrate: refused")

// Target is what the target holds before the copy.
type Target struct {
	// Schema is the schema version recorded there; 0 when none (an empty
	// target).
	Schema int
	// CodeSchema is the schema version the target's code writes.
	CodeSchema int
	// KVs are its keys in the store's key space.
	KVs []store.KV
	// Others counts its keys outside the store's key space (an instance
	// directory, leader keys): fulcrum data too.
	Others int
	// Where names it in messages ("etcd prefix /fulcrum/").
	Where string
}

// Kind is the count of one kind of record.
type Kind struct {
	// Name is the key's first segment: groups, replicas, blocks, ...
	Name string
	// Keys is how many keys of the kind the source holds; New,
	// Overwritten and Unchanged split them by what the target holds under
	// the same key (absent, another value, the same value).
	Keys, New, Overwritten, Unchanged int
}

// Plan is what a copy would do.
type Plan struct {
	// Kinds are the source's keys per kind: groups, replicas, blocks
	// first, then any other kind in name order.
	Kinds []Kind
	// Total sums Kinds.
	Total Kind
	// Kept counts the target's keys the source does not hold (and the
	// target's other keys): a forced copy leaves them as they are.
	Kept int
	// Refusal, when not nil, wraps ErrRefused and says why the copy must
	// not run.
	Refusal error
}

// known are the kinds of package groupstore, in the order they are
// reported.
var known = []string{"groups", "replicas", "blocks"}

// byKnown orders kinds: the known ones in their order, then the others by
// name.
func byKnown(a, b string) int {
	ia, ib := slices.Index(known, a), slices.Index(known, b)
	if ia < 0 {
		ia = len(known)
	}
	if ib < 0 {
		ib = len(known)
	}
	return cmp.Or(cmp.Compare(ia, ib), cmp.Compare(a, b))
}

// KindOf is the kind of a key: its first segment.
func KindOf(key string) string {
	k, _, _ := strings.Cut(key, "/")
	return k
}

// Decide plans the copy of src, a store of schema version srcSchema, into
// t. It refuses when the schemas differ (the target's code's, or the one
// recorded in the target), and when the target holds any key and force is
// false. Pure.
func Decide(src []store.KV, srcSchema int, t Target, force bool) Plan {
	held := make(map[string][]byte, len(t.KVs))
	for _, kv := range t.KVs {
		held[kv.Key] = kv.Value
	}
	byName := map[string]*Kind{}
	var p Plan
	p.Total.Name = "total"
	seen := map[string]bool{}
	for _, kv := range src {
		k := byName[KindOf(kv.Key)]
		if k == nil {
			k = &Kind{Name: KindOf(kv.Key)}
			byName[k.Name] = k
		}
		seen[kv.Key] = true
		for _, c := range []*Kind{k, &p.Total} {
			c.Keys++
			switch v, ok := held[kv.Key]; {
			case !ok:
				c.New++
			case string(v) == string(kv.Value):
				c.Unchanged++
			default:
				c.Overwritten++
			}
		}
	}
	for _, k := range byName {
		p.Kinds = append(p.Kinds, *k)
	}
	slices.SortFunc(p.Kinds, func(a, b Kind) int { return byKnown(a.Name, b.Name) })
	for _, kv := range t.KVs {
		if !seen[kv.Key] {
			p.Kept++
		}
	}
	p.Kept += t.Others
	p.Refusal = refusal(srcSchema, t, force)
	return p
}

// refusal says why the copy must not run, or nil.
func refusal(srcSchema int, t Target, force bool) error {
	if srcSchema != t.CodeSchema {
		return fmt.Errorf("%w: the data dir is of schema version %d, the etcd store of this fulcrum writes %d: migrate with the fulcrum version that wrote the data dir", ErrRefused, srcSchema, t.CodeSchema)
	}
	if t.Schema != 0 && t.Schema != srcSchema {
		return fmt.Errorf("%w: %s is of schema version %d, the data dir of %d: choose another prefix", ErrRefused, t.Where, t.Schema, srcSchema)
	}
	if n := len(t.KVs) + t.Others; n > 0 && !force {
		return fmt.Errorf("%w: %s already holds fulcrum data (%s): migrate copies into an empty prefix; --force overwrites the keys the data dir holds and leaves the others", ErrRefused, t.Where, describe(t))
	}
	return nil
}

// describe counts a target's keys per kind: "2 groups, 3 replicas, 1 other".
func describe(t Target) string {
	counts := map[string]int{}
	for _, kv := range t.KVs {
		counts[KindOf(kv.Key)]++
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	slices.SortFunc(names, byKnown)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%d %s", counts[n], n))
	}
	if t.Others > 0 {
		parts = append(parts, fmt.Sprintf("%d other keys", t.Others))
	}
	return strings.Join(parts, ", ")
}
