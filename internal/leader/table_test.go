package leader

import "testing"

func TestTable(t *testing.T) {
	t.Parallel()
	tb := newTable("/f/leaders/")
	for _, tc := range []struct {
		key, inst string
		created   int64
		group     string
		ok        bool
	}{
		{"/f/leaders/g/694d7a", "b", 9, "g", true},
		{"/f/leaders/g/694d7b", "a", 7, "g", true},
		{"/f/leaders/h/694d7c", "c", 12, "h", true},
		{"/f/leaders/g", "x", 1, "", false},       // no lease part
		{"/f/leaders//694d7d", "x", 1, "", false}, // no group
		{"/f/leaders/g/a/b", "x", 1, "", false},   // too deep
		{"/other/leaders/g/1", "x", 1, "", false}, // another prefix
	} {
		if g, ok := tb.put(tc.key, tc.inst, tc.created); g != tc.group || ok != tc.ok {
			t.Errorf("put(%q) = %q, %v; want %q, %v", tc.key, g, ok, tc.group, tc.ok)
		}
	}
	if o := tb.leader("g", 20); o != (Observed{Instance: "a", Term: 7, Rev: 20}) {
		t.Errorf("leader of g = %+v, want a's key, created first", o)
	}
	tb.del("/f/leaders/g/694d7b")
	if o := tb.leader("g", 21); o != (Observed{Instance: "b", Term: 9, Rev: 21}) {
		t.Errorf("leader of g after a's key went = %+v, want b", o)
	}
	tb.del("/f/leaders/g/694d7a")
	if o := tb.leader("g", 22); o != (Observed{Rev: 22}) {
		t.Errorf("leader of g with no key = %+v, want none", o)
	}
	if _, ok := tb.groups["g"]; ok {
		t.Error("an empty group is kept")
	}
	if o := tb.leader("h", 22); o.Instance != "c" {
		t.Errorf("leader of h = %+v, want c", o)
	}
}
