package etcdstore

import (
	"reflect"
	"strings"
	"testing"
)

// TestInspect: Inspect reads the store's keys, the schema version and the
// other keys under the prefix, and writes nothing: an empty prefix stays
// empty (Open would write the schema version there).
func TestInspect(t *testing.T) {
	s := openT(t, "")
	cli := s.Client()
	empty := newPrefix(t)
	c, err := Inspect(ctxT(t), Options{Endpoints: endpoints(t), Prefix: empty})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Empty() || c.Schema != 0 || c.Rev == 0 {
		t.Fatalf("Inspect of an empty prefix = %+v; want empty, schema 0, a revision", c)
	}
	resp, err := cli.Get(ctxT(t), empty, clientPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatalf("Inspect wrote %d keys under %s", len(resp.Kvs), empty)
	}

	put(t, s, "groups/a", `{"name":"a"}`)
	put(t, s, "replicas/a/r-1", "")
	if _, err := cli.Put(ctxT(t), s.Prefix()+"instances/one", "x"); err != nil {
		t.Fatal(err)
	}
	c, err = Inspect(ctxT(t), Options{Endpoints: endpoints(t), Prefix: s.Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := s.List(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.KVs, want) {
		t.Errorf("KVs = %+v, want %+v (as List reads them)", c.KVs, want)
	}
	if c.Schema != SchemaVersion || !reflect.DeepEqual(c.Others, []string{s.Prefix() + "instances/one"}) || c.Empty() {
		t.Errorf("Inspect = schema %d, others %q; want schema %d, others [%sinstances/one]", c.Schema, c.Others, SchemaVersion, s.Prefix())
	}
	if len(c.KVs) == 2 && c.KVs[1].Value == nil {
		t.Error("an empty value read as nil")
	}

	bad := newPrefix(t)
	if _, err := cli.Put(ctxT(t), bad+"meta/schema", "two"); err != nil {
		t.Fatal(err)
	}
	if _, err := Inspect(ctxT(t), Options{Endpoints: endpoints(t), Prefix: bad}); err == nil || !strings.Contains(err.Error(), `schema version "two" is not a number`) {
		t.Errorf("Inspect of a garbled schema version = %v", err)
	}
	if _, err := Inspect(ctxT(t), Options{Prefix: bad}); err == nil || !strings.Contains(err.Error(), "endpoints") {
		t.Errorf("Inspect without endpoints = %v", err)
	}
}
