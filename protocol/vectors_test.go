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

// The wire test vectors under testdata/ (testdata/README.md, loaded by
// internal/vectortest) are run by these tests and by the Python package's (python/tests), so that the two
// implementations cannot drift.

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
