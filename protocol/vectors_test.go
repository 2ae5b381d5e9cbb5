package protocol_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// The wire test vectors under testdata/ (testdata/README.md) are run by
// these tests and by the Python package's (python/tests), so that the two
// implementations cannot drift.

// vectorFile is the envelope of every vector file.
type vectorFile struct {
	Kind    string            `json:"kind"`
	Version int               `json:"version"`
	Cases   []json.RawMessage `json:"cases"`
}

// loadVectors reads testdata/<kind>.json and decodes each case into a T,
// rejecting keys T does not have (so that a misspelt expectation is not
// silently unchecked) and case names that repeat or break the pattern.
func loadVectors[T any](t *testing.T, kind string) []T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", kind+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s.json: %v", kind, err)
	}
	if f.Kind != kind || f.Version != 1 {
		t.Fatalf("%s.json: kind %q version %d, want %q version 1", kind, f.Kind, f.Version, kind)
	}
	if len(f.Cases) == 0 {
		t.Fatalf("%s.json: no cases", kind)
	}
	out := make([]T, len(f.Cases))
	names := map[string]bool{}
	for i, raw := range f.Cases {
		var named struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &named); err != nil || !validCaseName(named.Name) || names[named.Name] {
			t.Fatalf("%s.json: cases[%d]: name %q must be unique, lower case, [a-z0-9_.-]", kind, i, named.Name)
		}
		names[named.Name] = true
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			t.Fatalf("%s.json: case %s: %v", kind, named.Name, err)
		}
	}
	return out
}

func validCaseName(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-", r)) {
			return false
		}
	}
	return true
}

// expand is a vector's long-body builder (the schema's "expand").
type expand struct {
	Marker    string `json:"marker"`
	Item      string `json:"item"`
	Count     int    `json:"count"`
	Separator string `json:"separator"`
}

// buildBody builds a vector's body: body, then expand, then pad_to.
func buildBody(t *testing.T, body string, ex *expand, padTo int) []byte {
	t.Helper()
	if ex != nil {
		if strings.Count(body, ex.Marker) != 1 {
			t.Fatalf("expand: marker %q must occur once in the body", ex.Marker)
		}
		items := make([]string, ex.Count)
		for i := range items {
			items[i] = strings.ReplaceAll(ex.Item, "{i}", strconv.Itoa(i))
		}
		body = strings.Replace(body, ex.Marker, strings.Join(items, ex.Separator), 1)
	}
	if padTo > 0 {
		if len(body) > padTo {
			t.Fatalf("pad_to %d: the body is %d bytes already", padTo, len(body))
		}
		body += strings.Repeat(" ", padTo-len(body))
	}
	return []byte(body)
}

// TestVectorFilesEnvelope holds every testdata/*.json vector file to the
// envelope vectors.schema.json requires (no JSON Schema module: the keys
// are checked by hand), and the schema to naming every kind there is a
// file of.
func TestVectorFilesEnvelope(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "vectors.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Schema     string `json:"$schema"`
		Properties struct {
			Kind struct {
				Enum []string `json:"enum"`
			} `json:"kind"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("vectors.schema.json: %v", err)
	}
	if schema.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("vectors.schema.json: $schema %q, want draft 2020-12", schema.Schema)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := 0
	for _, f := range files {
		if filepath.Base(f) == "vectors.schema.json" {
			continue
		}
		kinds++
		kind := strings.TrimSuffix(filepath.Base(f), ".json")
		if !slices.Contains(schema.Properties.Kind.Enum, kind) {
			t.Errorf("%s: kind %q is not in the schema's kinds %v", f, kind, schema.Properties.Kind.Enum)
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Schema      string            `json:"$schema"`
			Kind        string            `json:"kind"`
			Version     int               `json:"version"`
			Description string            `json:"description"`
			Cases       []json.RawMessage `json:"cases"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&env); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if env.Schema != "./vectors.schema.json" || env.Kind != kind || env.Version != 1 || env.Description == "" || len(env.Cases) == 0 {
			t.Errorf("%s: $schema %q, kind %q, version %d, %d cases: want ./vectors.schema.json, %q, 1, a description and cases",
				f, env.Schema, env.Kind, env.Version, len(env.Cases), kind)
		}
		if err := protocol.UniqueKeys(raw, false); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if kinds != len(schema.Properties.Kind.Enum) {
		t.Errorf("%d vector files, the schema names %d kinds", kinds, len(schema.Properties.Kind.Enum))
	}
}
