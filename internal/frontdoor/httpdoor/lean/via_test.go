package lean

import "testing"

func TestViaHas(t *testing.T) {
	t.Parallel()
	const me = "fulcrum-0123456789ab"
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"1.1 fulcrum-0123456789ab", true},
		{"2 fulcrum-0123456789ab", true},
		{"1.0 fred, 1.1 fulcrum-0123456789ab (fulcrum)", true},
		{"1.1 fulcrum-0123456789ab, 1.1 p.example.net", true},
		{"  1.1   fulcrum-0123456789ab  ", true},
		{"", false},
		{"1.1 fulcrum-ba9876543210", false},
		{"1.1 fulcrum-0123456789abc", false},
		{"fulcrum-0123456789ab", false},
		{"1.1 p.example.net (fulcrum-0123456789ab)", false},
	} {
		if got := ViaHas(tc.v, me); got != tc.want {
			t.Errorf("ViaHas(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestViaHasDoesNotAllocate(t *testing.T) {
	v := "1.0 fred, 1.1 p.example.net (proxy), 1.1 fulcrum-0123456789ab"
	if n := testing.AllocsPerRun(100, func() { ViaHas(v, "fulcrum-0123456789ab") }); n != 0 {
		t.Errorf("ViaHas allocates %v times per call, want 0", n)
	}
}
