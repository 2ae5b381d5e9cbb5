package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestUniqueKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		fold  bool
		field string // "" when there is no duplicate
	}{
		{"flat", `{"a":1,"b":2}`, false, ""},
		{"top level", `{"load":1,"load":2}`, false, "load"},
		{"nested object", `{"metrics":{"cpu":0.5,"rps":1,"cpu":0.6}}`, false, "metrics.cpu"},
		{"in an array", `{"clients":[{"id":"a","rate":1},{"id":"b","id":"c"}]}`, false, "clients[1].id"},
		{"array of arrays", `[[1,{"x":1}],[{"y":1,"y":2}]]`, false, "[1][0].y"},
		{"same key in sibling objects", `{"a":{"k":1},"b":{"k":1},"c":[{"k":1},{"k":2}]}`, false, ""},
		{"same key at two depths", `{"k":{"k":{"k":1}}}`, false, ""},
		{"escaped the same", `{"a":1,"\u0061":2}`, false, "a"},
		{"after a nested value", `{"a":{"b":[1,2,{"c":3}]},"a":0}`, false, "a"},
		{"empty key twice", `{"":1,"":2}`, false, `""`},
		{"case differs, exact", `{"weight":1,"Weight":2}`, false, ""},
		{"case differs, folded", `{"weight":1,"Weight":2}`, true, "Weight"},
		{"kelvin sign folds to k", "{\"k\":1,\"\u212a\":2}", true, "\u212a"},
		{"scalars", `"a"`, false, ""},
		{"invalid JSON", `{"a":1,`, false, ""},
		{"duplicate before a syntax error", `{"a":1,"a":2,}`, false, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := UniqueKeys([]byte(tc.in), tc.fold)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("UniqueKeys(%s) = %v, want nil", tc.in, err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || fe.Allowed != DuplicateKeyAllowed {
				t.Fatalf("UniqueKeys(%s) = %v, want a duplicate key error for %s", tc.in, err, tc.field)
			}
		})
	}
}

func TestDecodeReportDuplicateKeys(t *testing.T) {
	t.Parallel()
	for in, field := range map[string]string{
		`{"load":1,"load":1e6}`:                               "load",
		`{"load":1,"metrics":{"cpu":0.1,"cpu":0.9}}`:          "metrics.cpu",
		`{"load":1,"clients":[{"id":"a","rate":1,"rate":9}]}`: "clients[0].rate",
	} {
		r, err := DecodeReport([]byte(in))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field || !strings.Contains(err.Error(), "duplicate key") {
			t.Errorf("DecodeReport(%s) = %+v, %v; want a duplicate key error for %s", in, r, err, field)
		}
	}
	// Keys differing in case are different metrics.
	if _, err := DecodeReport([]byte(`{"load":1,"metrics":{"x":1,"X":2}}`)); err != nil {
		t.Errorf("metrics x and X: %v", err)
	}
}

// FuzzUniqueKeys holds UniqueKeys to a reference built differently: for
// any input encoding/json accepts, it reports a duplicate exactly when
// some object has more members (counted in its raw text) than distinct
// keys (counted in what json.Unmarshal made of it, compared with
// strings.EqualFold when folding).
func FuzzUniqueKeys(f *testing.F) {
	for _, seed := range []string{
		`{"a":1,"b":2}`, `{"a":1,"a":2}`, `{"a":{"b":[{"c":1,"c":2}]}}`, `[{"x":1},{"x":1}]`,
		`{"a":"{\"a\":1,\"a\":2}"}`, `{"a\"":1,"a\\":2}`, `{"w":1,"W":2}`, `{"\u00e9":1,"\u00c9":2}`,
		`{"a":1,"\u0061":2}`, `{"\ud800":1,"\udc00":2}`, "{\"\xff\":1,\"\xfe\":2}", `{} {}`, `1`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fold bool) {
		err := UniqueKeys(data, fold)
		var fe *FieldError
		if err != nil && (!errors.As(err, &fe) || fe.Allowed != DuplicateKeyAllowed) {
			t.Fatalf("UniqueKeys(%q) = %v, want nil or a duplicate key *FieldError", data, err)
		}
		if !json.Valid(data) {
			return
		}
		if want := hasDuplicate(t, data, fold); (err != nil) != want {
			t.Fatalf("UniqueKeys(%q, fold %v) = %v, reference says duplicate: %v", data, fold, err, want)
		}
	})
}

// hasDuplicate is the reference: it decodes raw with encoding/json and
// compares each object's member count in its text with its distinct keys.
func hasDuplicate(t *testing.T, raw []byte, fold bool) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && obj != nil {
		var keys []string
		for k := range obj {
			if !fold || !containsFold(keys, k) {
				keys = append(keys, k)
			}
		}
		if membersInText(raw) != len(keys) {
			return true
		}
		for _, v := range obj {
			if hasDuplicate(t, v, fold) {
				return true
			}
		}
		return false
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		for _, v := range arr {
			if hasDuplicate(t, v, fold) {
				return true
			}
		}
	}
	return false
}

func containsFold(keys []string, k string) bool {
	for _, have := range keys {
		if strings.EqualFold(have, k) {
			return true
		}
	}
	return false
}

// membersInText counts the members of the JSON object raw: the colons at
// its own depth, outside strings.
func membersInText(raw []byte) int {
	n, depth, inString, escaped := 0, 0, false, false
	for _, c := range raw {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == ':' && depth == 1:
			n++
		}
	}
	return n
}
