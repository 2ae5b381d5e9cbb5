// Package vectortest loads the shared wire test vectors of
// protocol/testdata (described by its README.md and vectors.schema.json)
// for the Go tests that run them; the Python package's tests load the same
// files (python/tests/vectors.py), so that the two implementations cannot
// drift.
package vectortest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Cases returns the cases of protocol/testdata/<kind>.json, undecoded. It
// fails t when the file cannot be read, is not of that kind and version
// 1, has no cases, or a case's name is empty, repeated or not lower case
// [a-z0-9_.-].
func Cases(t testing.TB, kind string) []json.RawMessage {
	t.Helper()
	dir, err := testdataDir()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, kind+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Kind    string            `json:"kind"`
		Version int               `json:"version"`
		Cases   []json.RawMessage `json:"cases"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s.json: %v", kind, err)
	}
	if f.Kind != kind || f.Version != 1 {
		t.Fatalf("%s.json: kind %q version %d, want %q version 1", kind, f.Kind, f.Version, kind)
	}
	if len(f.Cases) == 0 {
		t.Fatalf("%s.json: no cases", kind)
	}
	names := map[string]bool{}
	for i, raw := range f.Cases {
		var named struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &named); err != nil || !validName(named.Name) || names[named.Name] {
			t.Fatalf("%s.json: cases[%d]: name %q must be unique, lower case, [a-z0-9_.-]", kind, i, named.Name)
		}
		names[named.Name] = true
	}
	return f.Cases
}

// Load is Cases with each case decoded into a T, rejecting members T does
// not have, so that a misspelt expectation is not silently unchecked.
// A runner that takes only some of a file's cases (the others are another
// runner's) decodes Cases itself.
func Load[T any](t testing.TB, kind string) []T {
	t.Helper()
	raws := Cases(t, kind)
	out := make([]T, len(raws))
	for i, raw := range raws {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			t.Fatalf("%s.json: cases[%d]: %v", kind, i, err)
		}
	}
	return out
}

// testdataDir is protocol/testdata of the module the test runs in (a
// test runs in its package's directory, below the module's go.mod).
func testdataDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "protocol", "testdata"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("vectortest: no go.mod above the test's directory")
		}
		dir = parent
	}
}

func validName(s string) bool {
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
