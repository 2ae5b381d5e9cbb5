package config

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fieldError turns a validation error into an *Error with the line of the
// key it names, and the value as written there. A key that is not in the
// file (its value is a default) gets the line of its closest enclosing key
// that is.
//
// A strategy parameter the strategy does not have is reported as an
// unknown key listing the parameters it has.
func fieldError(name string, root *yaml.Node, f File, err error) *Error {
	var fe *protocol.FieldError
	if !errors.As(err, &fe) {
		return &Error{File: name, Problem: ProblemInvalid, Allowed: err.Error()}
	}
	field := fe.Field
	if _, val := locate(root, field); val == nil && strings.HasSuffix(field, ".params.params") {
		// A strategy's complaint about its parameters as a whole.
		field = strings.TrimSuffix(field, ".params")
	}
	e := &Error{File: name, Key: field, Problem: ProblemInvalid, Value: formatValue(fe.Value), Allowed: fe.Allowed}
	pos, val := locate(root, field)
	if pos != nil {
		e.Line, e.Column = pos.Line, pos.Column
	}
	if val != nil && !strings.HasSuffix(field, "token") {
		e.Value = nodeValue(val)
	}
	if val != nil {
		if strat, known, ok := unknownParam(f, field); ok {
			e.Problem, e.Value = ProblemUnknown, ""
			e.Allowed = strategy.UnknownParamAllowed(strat, known)
		}
	}
	return e
}

// unknownParam reports whether field names a parameter that the group's
// strategy does not have ("groups[0].params.dampening" of a round-robin
// group), with the strategy's name and parameters.
func unknownParam(f File, field string) (strat string, known []string, ok bool) {
	steps := splitPath(field)
	if len(steps) != 4 || steps[0].key != "groups" || steps[2].key != "params" || steps[3].index >= 0 {
		return "", nil, false
	}
	i, param := steps[1].index, steps[3].key
	if i < 0 || i >= len(f.Groups) {
		return "", nil, false
	}
	strat = f.Groups[i].Strategy
	d, found := strategy.Lookup(strat)
	if !found {
		return "", nil, false
	}
	defaults := d.Defaults()
	if _, has := defaults[param]; has {
		return "", nil, false
	}
	for k := range defaults {
		known = append(known, k)
	}
	slices.Sort(known)
	return strat, known, true
}

// pathStep is one step of a dotted path: a key or a list index.
type pathStep struct {
	key   string
	index int // -1 for a key
}

// splitPath splits "groups[0].replicas[1].address" into its steps.
func splitPath(path string) []pathStep {
	var steps []pathStep
	for part := range strings.SplitSeq(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		steps = append(steps, pathStep{key: key, index: -1})
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if !ok || err != nil {
				break
			}
			steps = append(steps, pathStep{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return steps
}

// locate finds path in the tree. pos is the node to point at: the scalar
// value when the path leads to one, else the key (or list item) that
// starts the value, else the closest enclosing key present in the file;
// nil when not even the first step is in the file. val is the value at
// path, aliases followed, or nil when the path is not in the file.
func locate(root *yaml.Node, path string) (pos, val *yaml.Node) {
	if root == nil {
		return nil, nil
	}
	cur := deref(root)
	for _, s := range splitPath(path) {
		if cur == nil {
			return pos, nil
		}
		if s.index >= 0 {
			if cur.Kind != yaml.SequenceNode || s.index >= len(cur.Content) {
				return pos, nil
			}
			pos = cur.Content[s.index]
			cur = deref(pos)
			continue
		}
		k, v := lookup(cur, s.key, 0)
		if k == nil {
			return pos, nil
		}
		pos, cur = k, deref(v)
	}
	if cur != nil && cur.Kind == yaml.ScalarNode {
		return cur, cur
	}
	return pos, cur
}

// lookup finds key in mapping n: an explicit key first (the last one, as
// the decoder keeps it), then the mappings merged in with "<<" in order.
func lookup(n *yaml.Node, key string, depth int) (k, v *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode || depth > maxMergeDepth {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		ki, vi := n.Content[i], n.Content[i+1]
		switch {
		case isMerge(ki):
			merges = append(merges, vi)
		case ki.Kind == yaml.ScalarNode && ki.Value == key:
			k, v = ki, vi
		}
	}
	if k != nil {
		return k, v
	}
	for _, m := range merges {
		m = deref(m)
		items := []*yaml.Node{m}
		if m != nil && m.Kind == yaml.SequenceNode {
			items = m.Content
		}
		for _, item := range items {
			if k, v := lookup(deref(item), key, depth+1); k != nil {
				return k, v
			}
		}
	}
	return nil, nil
}

// deref follows aliases a bounded number of times.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == maxMergeDepth {
			return nil
		}
		n = n.Alias
	}
	return n
}
