package api

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// FuzzUnmarshalStrict holds the admin API's decoding to encoding/json's
// (into an empty interface, where unknown fields do not arise): for input
// without duplicate keys, unmarshalStrict accepts what json.Unmarshal
// accepts, with the same result, and refuses what it refuses; input with
// a duplicate key (compared without case) is refused.
func FuzzUnmarshalStrict(f *testing.F) {
	for _, seed := range []string{
		`{"address":"http://127.0.0.1:9001","weight":2}`, `{"a":1,"a":2}`, `{"a":1,"A":2}`,
		`{"a":{"b":[{"c":1},{"c":1,"C":2}]}}`, `{"front_door":"127.0.0.1:0"}}`, `{} {}`, `{}]`,
		`null`, `[1,2]`, `"x"`, ` {"a":1} `, `{"a":1}x`, `{"\u0061":1,"a":2}`, ``, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want any
		fe := unmarshalStrict(data, &got)
		refErr := json.Unmarshal(data, &want)
		dup := refErr == nil && protocol.UniqueKeys(data, true) != nil
		switch {
		case refErr != nil && fe == nil:
			t.Fatalf("unmarshalStrict(%q) accepted what json.Unmarshal refuses: %v", data, refErr)
		case refErr != nil:
		case dup && fe == nil:
			t.Fatalf("unmarshalStrict(%q) accepted a duplicate key", data)
		case dup:
		case fe != nil:
			t.Fatalf("unmarshalStrict(%q) = %v; json.Unmarshal accepts it", data, fe)
		case fe == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("unmarshalStrict(%q) = %#v, json.Unmarshal = %#v", data, got, want)
		}
	})
}
