package ctl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/fulcrum-lb/fulcrum/protocol"
	"go.yaml.in/yaml/v3"
)

// ReadGroups reads group definitions from a YAML or JSON file ("-" is
// standard input): a single group, a document with just a "groups:" list
// (the config file's section), or several YAML documents of either form. Unknown keys are errors with
// the file and line.
func ReadGroups(path string, stdin io.Reader) ([]protocol.Group, error) {
	var (
		data []byte
		err  error
	)
	if path == "-" {
		data, err = io.ReadAll(stdin)
		path = "(stdin)"
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	groups, err := parseGroups(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("%s: no group in the file", path)
	}
	return groups, nil
}

// parseGroups decodes every document of data. Two decoders walk the same
// documents in step: one sees each document's shape, the other decodes it
// strictly into the type that shape calls for.
func parseGroups(data []byte) ([]protocol.Group, error) {
	shape := yaml.NewDecoder(bytes.NewReader(data))
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	var out []protocol.Group
	for {
		var doc yaml.Node
		err := shape.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: a group file holds a group (a mapping with name, front_door, ...) or a mapping with a groups list", doc.Line)
		}
		if err := zeroWeight(&doc); err != nil {
			return nil, err
		}
		if hasKey(doc.Content[0], "groups") {
			var list struct {
				Groups []protocol.Group `yaml:"groups"`
			}
			if err := strict.Decode(&list); err != nil {
				return nil, err
			}
			out = append(out, list.Groups...)
		} else {
			var g protocol.Group
			if err := strict.Decode(&g); err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		for i, g := range out {
			if g.Name == "" {
				return nil, fmt.Errorf("group %d has no name", i+1)
			}
		}
	}
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}
