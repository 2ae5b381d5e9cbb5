package affinity

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Table is a group's client-activated entries: per client-activated rule
// an LRU (hashicorp/golang-lru/v2's plain one) bounded by the rule's
// max_entries, with idle expiry on the time callers pass in. It decides
// nothing about replicas (Router does) and does no I/O; its Store, when
// set, is only held here for the Router. Safe for concurrent use (one
// mutex).
type Table struct {
	rules *Rules

	mu    sync.Mutex
	lrus  []*simplelru.LRU[string, *entry] // by rule index; nil for other kinds
	store Store
	stats Stats
}

// entry is one client-activated object. Guarded by Table.mu.
type entry struct {
	replica  string
	created  time.Time
	lastUsed time.Time
	// renewed is when the entry's Store lease was last renewed (or put).
	renewed time.Time
	// open counts the tcp connections open for the object: it is not
	// idle while one is.
	open int
}

// Stats are a table's counters.
type Stats struct {
	// Entries counts the entries held, by rule kind (only client-activated
	// rules hold entries; every kind of the table's rules is present).
	Entries map[string]int
	// Created counts entries made; Expired those dropped after their idle
	// timeout; Evicted those pushed out by max_entries; Gone those dropped
	// because their replica was lost (the call got 410 or a refused
	// connection).
	Created, Expired, Evicted, Gone uint64
}

// NewTable returns an empty table for rules (nil rules: a table that
// holds nothing).
func NewTable(rules *Rules) *Table {
	t := &Table{rules: rules, lrus: make([]*simplelru.LRU[string, *entry], rules.Len())}
	for i := range t.lrus {
		r := rules.Rule(i)
		if r.Kind != protocol.AffinityClientActivated {
			continue
		}
		l, err := simplelru.NewLRU[string, *entry](r.MaxEntries, nil)
		if err != nil {
			panic("affinity: " + err.Error()) // Compile keeps MaxEntries ≥ 1
		}
		t.lrus[i] = l
	}
	return t
}

// Rules are the rules the table was made for.
func (t *Table) Rules() *Rules { return t.rules }

// SetStore makes s the table's cluster-wide store (nil: this instance
// only). The Router puts, renews, looks up and deletes entries through it.
func (t *Table) SetStore(s Store) {
	t.mu.Lock()
	t.store = s
	t.mu.Unlock()
}

// Store is the table's store (nil: none).
func (t *Table) Store() Store {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.store
}

func (t *Table) lru(rule int) *simplelru.LRU[string, *entry] {
	if rule < 0 || rule >= len(t.lrus) {
		return nil
	}
	return t.lrus[rule]
}

// expiredLocked: e has been idle for the rule's timeout at now.
func (t *Table) expiredLocked(rule int, e *entry, now time.Time) bool {
	return e.open == 0 && !now.Before(e.lastUsed.Add(t.rules.Rule(rule).Timeout))
}

// Touch looks up (rule, key) and, when there is a live entry, counts a
// use at now (it is then the rule's most recently used). It returns the
// entry's replica and whether a Store renewal is due (the last was at
// least timeout/3 ago; the renewal is then counted as done). An entry
// found expired is dropped and counted as expired.
func (t *Table) Touch(rule int, key string, now time.Time) (replica string, renew, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lru(rule)
	if l == nil {
		return "", false, false
	}
	e, ok := l.Get(key)
	if !ok {
		return "", false, false
	}
	if t.expiredLocked(rule, e, now) {
		l.Remove(key)
		t.stats.Expired++
		return "", false, false
	}
	e.lastUsed = now
	if now.Sub(e.renewed) >= t.rules.Rule(rule).Timeout/3 {
		e.renewed = now
		renew = true
	}
	return e.replica, renew, true
}

// Create makes (rule, key) → replica at now (an object created by a call
// or connection), replacing any entry for the key, and reports whether a
// new entry was made (false: the key was already on that replica, and
// this counted as a use). The least recently used entry of the rule is
// evicted when the rule is full.
func (t *Table) Create(rule int, key, replica string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.createLocked(rule, key, replica, now, 0, true)
}

// Adopt holds (rule, key) → replica at now, as another instance created
// it (found in the Store): like Create, but not counted as created here.
func (t *Table) Adopt(rule int, key, replica string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.createLocked(rule, key, replica, now, 0, false)
}

func (t *Table) createLocked(rule int, key, replica string, now time.Time, open int, count bool) bool {
	l := t.lru(rule)
	if l == nil {
		return false
	}
	if e, ok := l.Get(key); ok && e.replica == replica && !t.expiredLocked(rule, e, now) {
		e.lastUsed = now
		e.open += open
		return false
	}
	if l.Add(key, &entry{replica: replica, created: now, lastUsed: now, renewed: now, open: open}) {
		t.stats.Evicted++
	}
	if count {
		t.stats.Created++
	}
	return true
}

// Drop removes (rule, key); gone counts it as lost with its replica.
// It reports whether there was an entry.
func (t *Table) Drop(rule int, key string, gone bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lru(rule)
	if l == nil || !l.Remove(key) {
		return false
	}
	if gone {
		t.stats.Gone++
	}
	return true
}

// Open counts a connection opened at now for (rule, key) on replica,
// creating the entry if there is none (or replacing one on another
// replica). It reports whether an entry was made.
func (t *Table) Open(rule int, key, replica string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.createLocked(rule, key, replica, now, 1, true)
}

// Close counts the end at now of a connection Open counted: the object's
// idle time starts again from now once no connection is open.
func (t *Table) Close(rule int, key, replica string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lru(rule)
	if l == nil {
		return
	}
	if e, ok := l.Peek(key); ok && e.replica == replica {
		e.open = max(e.open-1, 0)
		e.lastUsed = now
		l.Get(key) // most recently used
	}
}

// Expire drops the entries idle for their rule's timeout at now and
// returns how many. Entries with an open connection never expire.
func (t *Table) Expire(now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for i, l := range t.lrus {
		if l == nil {
			continue
		}
		// Oldest first: every use moves an entry to the front, so the
		// entries without open connections are in lastUsed order and the
		// walk stops at the first of them not yet expired. Open ones are
		// moved to the front as they are met (they are in use).
		for range l.Len() {
			key, e, ok := l.GetOldest()
			if !ok {
				break
			}
			if e.open > 0 {
				l.Get(key)
				continue
			}
			if !t.expiredLocked(i, e, now) {
				break
			}
			l.Remove(key)
			t.stats.Expired++
			n++
		}
	}
	return n
}

// DropReplica drops every entry on replica id (removed from the group)
// and returns how many, counted as gone.
func (t *Table) DropReplica(id string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, l := range t.lrus {
		if l == nil {
			continue
		}
		for _, k := range l.Keys() {
			if e, ok := l.Peek(k); ok && e.replica == id {
				l.Remove(k)
				n++
			}
		}
	}
	t.stats.Gone += uint64(n)
	return n
}

// Len is the number of entries held (expired ones not yet dropped
// included).
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, l := range t.lrus {
		if l != nil {
			n += l.Len()
		}
	}
	return n
}

// Stats returns the table's counters and its entries by kind.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.Entries = map[string]int{}
	for i, l := range t.lrus {
		kind := t.rules.Rule(i).Kind
		s.Entries[kind] += 0
		if l != nil {
			s.Entries[kind] += l.Len()
		}
	}
	return s
}

// List returns a page of the table at now: at most limit (at least 1)
// entries after the token after ("" from the start), ordered by rule then
// key, without the expired ones. Next is the token of the next page.
// The token is "<rule>/<key>".
func (t *Table) List(after string, limit int, now time.Time) protocol.SessionList {
	limit = max(limit, 1)
	afterRule, afterKey := -1, ""
	if r, k, ok := strings.Cut(after, "/"); ok {
		if n, err := strconv.Atoi(r); err == nil {
			afterRule, afterKey = n, k
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := protocol.SessionList{Sessions: []protocol.SessionEntry{}}
	for i, l := range t.lrus {
		if l == nil || i < afterRule {
			continue
		}
		timeout := t.rules.Rule(i).Timeout
		keys := l.Keys()
		slices.Sort(keys)
		for _, k := range keys {
			e, _ := l.Peek(k)
			if t.expiredLocked(i, e, now) {
				continue
			}
			out.Total++
			if i == afterRule && cmp.Compare(k, afterKey) <= 0 {
				continue
			}
			if len(out.Sessions) == limit {
				if out.Next == "" {
					last := out.Sessions[limit-1]
					out.Next = strconv.Itoa(last.Rule) + "/" + last.Key
				}
				continue
			}
			exp := e.lastUsed.Add(timeout)
			if e.open > 0 {
				exp = now.Add(timeout)
			}
			out.Sessions = append(out.Sessions, protocol.SessionEntry{Rule: i, Key: k, Replica: e.replica, Created: e.created, LastUsed: e.lastUsed, Expires: exp})
		}
	}
	return out
}
