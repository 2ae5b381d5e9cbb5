package config

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// checkTree walks the node tree alongside the File type and reports every
// unknown key, duplicate key and value of the wrong type with its line and
// dotted path: the decoder itself reports these without the path, and
// errors from a field's UnmarshalText (durations) without the line.
//
// It prunes what it reports from the tree, so that the rest decodes: a
// key that is unknown, duplicate or of the wrong type is dropped (its
// field keeps its default), a list item of the wrong type becomes an empty
// mapping (or is dropped, in a list of scalars). The returned skip says
// which validation errors then only echo a problem already reported
// (skip.covers).
func checkTree(name string, root *yaml.Node) ([]*Error, skipped) {
	c := &checker{file: name, budget: maxVisits}
	if c.check(root, reflect.TypeFor[File](), "") {
		// The whole file is of the wrong shape: nothing in it is used.
		root.Kind, root.Tag, root.Content, root.Value = yaml.MappingNode, "!!map", nil, ""
	}
	return c.errs, c.skip
}

// maxVisits bounds the nodes checkTree visits, aliases included, so that
// a document built to explode through aliases cannot stall it; the
// decoder rejects such documents on its own.
const maxVisits = 100_000

// maxMergeDepth bounds merge keys ("<<") within merge keys.
const maxMergeDepth = 16

type checker struct {
	file   string
	budget int
	errs   []*Error
	skip   skipped
}

var (
	durationType        = reflect.TypeFor[protocol.Duration]()
	optDurationType     = reflect.TypeFor[OptionalDuration]()
	byteSizeType        = reflect.TypeFor[protocol.ByteSize]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// resolve follows aliases. It returns nil when the visit budget is spent.
func (c *checker) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxMergeDepth; i++ {
		n = n.Alias
	}
	c.budget--
	if n == nil || n.Kind == yaml.AliasNode || c.budget < 0 {
		return nil
	}
	return n
}

// fail records a problem.
func (c *checker) fail(e *Error) { c.errs = append(c.errs, e) }

// invalid records a value of the wrong type at path; the checks that
// depend on it are skipped. It returns true, for check to return.
func (c *checker) invalid(n *yaml.Node, path, allowed string) bool {
	c.fail(&Error{File: c.file, Line: n.Line, Column: n.Column, Key: path, Problem: ProblemInvalid, Value: nodeValue(n), Allowed: allowed})
	c.skip.values = append(c.skip.values, path)
	return true
}

// check records the problems of n as a value of type t at path. It
// returns true when n as a whole is unusable and the caller must drop it;
// problems within n are recorded and pruned from n itself.
func (c *checker) check(n *yaml.Node, t reflect.Type, path string) bool {
	orig := n
	if n = c.resolve(n); n == nil {
		return false
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return false // null leaves the default
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) || isBasic(t.Kind()) {
		return c.scalar(orig, n, t, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return c.invalid(n, path, "must be a mapping with keys: "+strings.Join(keyNames(t), ", "))
		}
		c.mapping(n, t, path, 0)
		return false
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return c.invalid(n, path, "must be a list")
		}
		c.list(n, t, path)
		return false
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return c.invalid(n, path, "must be a mapping")
		}
		return c.decodes(orig, n, t, path, "must be a mapping of names to values")
	}
	return false // interfaces take anything
}

// list checks the items of list n of type t. An unusable item of a list
// of structs becomes an empty mapping, so that the items after it keep
// their index (and the errors about them their path).
func (c *checker) list(n *yaml.Node, t reflect.Type, path string) {
	kept := n.Content[:0:0]
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		bad := false
		if r := c.resolve(item); r != nil && r.Kind == yaml.ScalarNode && r.ShortTag() == "!!null" {
			// The decoder would drop the item without a word.
			c.fail(&Error{File: c.file, Line: r.Line, Column: r.Column, Key: p, Problem: ProblemInvalid, Value: "(empty)", Allowed: "a list item must not be empty"})
			c.skip.values = append(c.skip.values, p)
			bad = true
		} else {
			bad = c.check(item, t.Elem(), p)
		}
		switch {
		case !bad:
			kept = append(kept, item)
		case t.Elem().Kind() == reflect.Struct:
			kept = append(kept, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: item.Line, Column: item.Column})
		}
	}
	n.Content = kept
}

func isBasic(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// scalar checks a scalar by decoding it the way the decoder will.
func (c *checker) scalar(orig, n *yaml.Node, t reflect.Type, path string) bool {
	allowed := describe(t)
	if (t == durationType || t == optDurationType) && n.Kind == yaml.ScalarNode {
		if d, err := time.ParseDuration(n.Value); err == nil && d < 0 {
			allowed = "must not be negative"
		}
	}
	if n.Kind != yaml.ScalarNode {
		return c.invalid(n, path, allowed)
	}
	if isInt(t.Kind()) && t != durationType && t != byteSizeType && n.ShortTag() != "!!int" {
		// The decoder would cut 1.5 to 1.
		return c.invalid(n, path, allowed)
	}
	return c.decodes(orig, n, t, path, allowed)
}

// decodes reports an error unless orig decodes into a value of type t.
func (c *checker) decodes(orig, n *yaml.Node, t reflect.Type, path, allowed string) bool {
	if err := orig.Decode(reflect.New(t).Interface()); err != nil {
		if strings.Contains(err.Error(), "excessive aliasing") {
			allowed = "document contains excessive aliasing"
		}
		return c.invalid(n, path, allowed)
	}
	return false
}

// describe says what a scalar of type t must look like.
func describe(t reflect.Type) string {
	if t == durationType || t == optDurationType {
		return `must be a Go duration such as "500ms" or "2s"`
	}
	if t == byteSizeType {
		return protocol.ByteSizeAllowed
	}
	switch k := t.Kind(); {
	case k == reflect.Bool:
		return "must be true or false"
	case k == reflect.Float32 || k == reflect.Float64:
		return "must be a number"
	case isInt(k):
		return "must be an integer"
	}
	return "must be a string"
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// mapping checks the keys and values of a mapping for struct type t,
// following merge keys ("<<") into the mappings they merge. Every pair it
// reports is dropped from n.
func (c *checker) mapping(n *yaml.Node, t reflect.Type, path string, depth int) {
	fields := fieldIndex(t)
	seen := map[string]*yaml.Node{}
	kept := n.Content[:0:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if c.pair(k, v, t, fields, seen, path, depth) {
			kept = append(kept, k, v)
		}
	}
	n.Content = kept
}

// pair checks one key and value of a mapping for struct type t; it
// returns whether the pair is kept.
func (c *checker) pair(k, v *yaml.Node, t reflect.Type, fields map[string]reflect.Type, seen map[string]*yaml.Node, path string, depth int) bool {
	if isMerge(k) {
		if c.merge(k, v, t, path, depth) {
			// What the merge would have set is missing.
			c.skip.partial = append(c.skip.partial, path)
			return false
		}
		return true
	}
	if k.Kind != yaml.ScalarNode {
		c.fail(&Error{File: c.file, Line: k.Line, Column: k.Column, Key: path, Problem: ProblemInvalid, Value: nodeValue(k), Allowed: "keys must be plain names"})
		return false
	}
	key := joinKey(path, k.Value)
	if prev, dup := seen[k.Value]; dup {
		c.fail(&Error{File: c.file, Line: k.Line, Column: k.Column, Key: key, Problem: ProblemDuplicate, Allowed: fmt.Sprintf("already set on line %d", prev.Line)})
		return false
	}
	seen[k.Value] = k
	ft, ok := fields[k.Value]
	if !ok {
		c.fail(&Error{File: c.file, Line: k.Line, Column: k.Column, Key: key, Problem: ProblemUnknown, Allowed: "allowed keys: " + strings.Join(keyNames(t), ", ")})
		// A misspelt key leaves the one meant missing.
		c.skip.partial = append(c.skip.partial, path)
		return false
	}
	return !c.check(v, ft, key)
}

// merge checks the value of a merge key: a mapping, or a list of them. It
// returns true when the merge key must be dropped.
func (c *checker) merge(k, v *yaml.Node, t reflect.Type, path string, depth int) bool {
	const allowed = "a merge key (<<) takes a mapping or a list of mappings, usually aliases such as *defaults"
	if depth >= maxMergeDepth {
		c.fail(&Error{File: c.file, Line: k.Line, Column: k.Column, Key: joinKey(path, "<<"), Problem: ProblemInvalid, Allowed: "merge keys nest too deeply"})
		return true
	}
	m := c.resolve(v)
	if m == nil {
		return false
	}
	items := []*yaml.Node{m}
	if m.Kind == yaml.SequenceNode {
		items = m.Content
	}
	for _, item := range items {
		r := c.resolve(item)
		if r == nil {
			return false
		}
		if r.Kind != yaml.MappingNode {
			c.fail(&Error{File: c.file, Line: k.Line, Column: k.Column, Key: joinKey(path, "<<"), Problem: ProblemInvalid, Value: nodeValue(r), Allowed: allowed})
			return true
		}
		c.mapping(r, t, path, depth+1)
	}
	return false
}

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge"
}

// fieldIndex maps the YAML keys of struct type t to their field types.
func fieldIndex(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for f := range t.Fields() {
		if name, ok := yamlName(f); ok {
			m[name] = f.Type
		}
	}
	return m
}

// keyNames lists the YAML keys of struct type t in declaration order.
func keyNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if name, ok := yamlName(f); ok {
			names = append(names, name)
		}
	}
	return names
}

// yamlName is the key of a struct field in YAML, as the decoder sees it.
func yamlName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("yaml")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, true
}

// nodeValue renders a node as written, for error messages.
func nodeValue(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "(a mapping)"
	case yaml.SequenceNode:
		return "(a list)"
	case yaml.AliasNode:
		return "*" + n.Value
	}
	if n.ShortTag() == "!!str" || n.ShortTag() == "!!binary" {
		return strconv.Quote(truncate(n.Value))
	}
	return truncate(n.Value)
}
