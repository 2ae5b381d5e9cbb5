package protocol_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
