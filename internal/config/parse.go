package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlLineRE matches the line yaml.v3 puts in its messages.
var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// parseTree parses data into a node tree and returns the document's root
// node, or nil for a file without content (empty, only comments, or null).
func parseTree(name string, data []byte) (*yaml.Node, *Error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(name, data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(name, data, err)
	default:
		return nil, &Error{File: name, Line: next.Line, Column: next.Column, Problem: ProblemSyntax + ": a config file holds a single YAML document (remove the second '---')"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil
	}
	return root, nil
}

// syntaxError turns a parser error into an *Error with its line.
func syntaxError(name string, data []byte, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{File: name, Problem: ProblemSyntax + ": " + msg}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Problem = ProblemSyntax + ": " + m[2]
	} else if m := unknownAnchorRE.FindStringSubmatch(msg); m != nil {
		e.Line = lineOf(data, "*"+m[1])
	}
	return e
}

// unknownAnchorRE matches the parser's message for an alias to nothing,
// which comes without a line.
var unknownAnchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// lineOf returns the 1-based line of the first occurrence of s in data,
// or 0.
func lineOf(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 0
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

// decodeError turns an error of the final decode into an *Error. checkTree
// catches what the decoder rejects before it runs, so this is a fallback
// that keeps the decoder's message and finds the key on its line.
func decodeError(name string, root *yaml.Node, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	e := &Error{File: name, Problem: msg}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Problem = m[2]
		if strings.Contains(e.Problem, " not found in type ") {
			e.Problem = ProblemUnknown
		}
		e.Key = keyOnLine(root, e.Line)
	}
	return e
}

// keyOnLine returns the dotted path of the first key on line, or "". It
// does not follow aliases, so it visits every node once.
func keyOnLine(root *yaml.Node, line int) string {
	var walk func(n *yaml.Node, path string) (string, bool)
	walk = func(n *yaml.Node, path string) (string, bool) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := joinKey(path, k.Value)
				if k.Line == line {
					return p, true
				}
				if found, ok := walk(v, p); ok {
					return found, true
				}
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				p := path + "[" + strconv.Itoa(i) + "]"
				if item.Line == line && item.Kind == yaml.ScalarNode {
					return p, true
				}
				if found, ok := walk(item, p); ok {
					return found, true
				}
			}
		}
		return "", false
	}
	p, _ := walk(root, "")
	return p
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
