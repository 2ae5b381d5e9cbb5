package leader

import "strings"

// table is the election keys under <prefix>leaders/, as the observer
// last listed and watched them: per group, each candidate's key with its
// instance (the key's value) and create revision. The group's leader is
// the key created first (concurrency.Election's rule). Not safe for
// concurrent use.
type table struct {
	root   string // <prefix>leaders/
	groups map[string]map[string]entry
}

type entry struct {
	instance string
	created  int64
}

func newTable(root string) *table {
	return &table{root: root, groups: map[string]map[string]entry{}}
}

// group is the group of an election key <root><group>/<lease>, or ok
// false for a key of another shape (skipped).
func (t *table) group(key string) (group string, ok bool) {
	rest, ok := strings.CutPrefix(key, t.root)
	if !ok {
		return "", false
	}
	group, lease, ok := strings.Cut(rest, "/")
	if !ok || group == "" || lease == "" || strings.Contains(lease, "/") {
		return "", false
	}
	return group, true
}

// put records a candidate's key; ok is false for a key of another shape.
func (t *table) put(key, instance string, created int64) (group string, ok bool) {
	group, ok = t.group(key)
	if !ok {
		return "", false
	}
	if t.groups[group] == nil {
		t.groups[group] = map[string]entry{}
	}
	t.groups[group][key] = entry{instance: instance, created: created}
	return group, true
}

// del forgets a candidate's key.
func (t *table) del(key string) (group string, ok bool) {
	group, ok = t.group(key)
	if !ok {
		return "", false
	}
	delete(t.groups[group], key)
	if len(t.groups[group]) == 0 {
		delete(t.groups, group)
	}
	return group, true
}

// leader is the group's leader at revision rev (the table's state).
func (t *table) leader(group string, rev int64) Observed {
	o := Observed{Rev: rev}
	for _, e := range t.groups[group] {
		if o.Term == 0 || e.created < o.Term {
			o.Instance, o.Term = e.instance, e.created
		}
	}
	return o
}
