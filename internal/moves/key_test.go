package moves

import (
	"strings"
	"testing"
)

func TestEscapeSegment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"unreserved kept", "Az09-_.~", "Az09-_.~"},
		{"empty", "", "%"},
		{"slash", "a/b", "a%2Fb"},
		{"percent", "100%", "100%25"},
		{"dot segments stay", "..", ".."},
		{"space and colon", "a b:c", "a%20b%3Ac"},
		{"utf-8", "é", "%C3%A9"},
		{"nul", "\x00", "%00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := EscapeSegment(tt.in)
			if got != tt.want {
				t.Fatalf("EscapeSegment(%q) = %q, want %q", tt.in, got, tt.want)
			}
			back, err := UnescapeSegment(got)
			if err != nil || back != tt.in {
				t.Fatalf("UnescapeSegment(%q) = %q, %v; want %q", got, back, err, tt.in)
			}
		})
	}
}

func TestUnescapeSegmentRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "segment is empty"},
		{"slash", "a/b", `byte '/' at 1 must be escaped as %2F`},
		{"unescaped space", "a b", `byte ' ' at 1 must be escaped as %20`},
		{"lower-case hex", "a%2fb", `"%2f" at 1: want %XX with upper-case hex digits`},
		{"not hex", "%GG", `"%GG" at 0: want %XX`},
		{"cut short", "ab%2", "% at 2 cut short"},
		{"cut shorter", "ab%", "% at 2 cut short"},
		{"escaped unreserved", "%41", `"%41" at 0 escapes 'A', which must be written as it is`},
		{"slash after escape", "%2F/", `byte '/' at 3 must be escaped`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := UnescapeSegment(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("UnescapeSegment(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	k := Key("/fulcrum/", "prime", "c/1")
	if want := "/fulcrum/moves/prime/c%2F1"; k != want {
		t.Fatalf("Key = %q, want %q", k, want)
	}
	if p := GroupPrefix("/fulcrum/", "prime"); !strings.HasPrefix(k, p) || p != "/fulcrum/moves/prime/" {
		t.Fatalf("GroupPrefix = %q, not a prefix of %q", p, k)
	}
	g, c, err := ParseKey("/fulcrum/", k)
	if err != nil || g != "prime" || c != "c/1" {
		t.Fatalf("ParseKey(%q) = %q, %q, %v", k, g, c, err)
	}
}

func TestParseKeyRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, key, want string
	}{
		{"other prefix", "/other/moves/g/c", "not under /fulcrum/moves/"},
		{"other directory", "/fulcrum/kv/groups/g", "not under /fulcrum/moves/"},
		{"no client", "/fulcrum/moves/g", "want /fulcrum/moves/<group>/<client>"},
		{"three segments", "/fulcrum/moves/g/c/d", "want /fulcrum/moves/<group>/<client>"},
		{"bad group", "/fulcrum/moves/g%zz/c", "group: segment"},
		{"empty client", "/fulcrum/moves/g/", "client: segment is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := ParseKey("/fulcrum/", tt.key)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("ParseKey(%q) = %v, want an error naming the key and containing %q", tt.key, err, tt.want)
			}
		})
	}
}

// FuzzSegment: any string escapes to one segment without '/', which
// unescapes back to it, and whatever UnescapeSegment accepts is exactly
// what EscapeSegment writes (one string, one segment).
func FuzzSegment(f *testing.F) {
	for _, s := range []string{"", "a", "a/b", "%", "%25", "%2F", "..", "é", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seg := EscapeSegment(s)
		if seg == "" || strings.Contains(seg, "/") {
			t.Fatalf("EscapeSegment(%q) = %q: not one non-empty segment", s, seg)
		}
		back, err := UnescapeSegment(seg)
		if err != nil || back != s {
			t.Fatalf("UnescapeSegment(EscapeSegment(%q)) = %q, %v", s, back, err)
		}
		if u, err := UnescapeSegment(s); err == nil && EscapeSegment(u) != s {
			t.Fatalf("UnescapeSegment(%q) = %q accepted, but EscapeSegment gives %q: not canonical", s, u, EscapeSegment(u))
		}
	})
}
