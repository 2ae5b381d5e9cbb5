package moves

import (
	"fmt"
	"strings"
)

// dir is the directory of the moves under a deployment's prefix.
const dir = "moves/"

// GroupPrefix is the etcd prefix of group's moves under the deployment's
// prefix: <prefix>moves/<group>/ (the group escaped).
func GroupPrefix(prefix, group string) string {
	return prefix + dir + EscapeSegment(group) + "/"
}

// Key is the etcd key of client's move in group: <prefix>moves/<group>/<client>,
// both escaped with EscapeSegment.
func Key(prefix, group, client string) string {
	return GroupPrefix(prefix, group) + EscapeSegment(client)
}

// ParseKey splits a key of the moves under prefix into its group and
// client, unescaped. It refuses a key outside <prefix>moves/, without
// exactly two segments there, or with a segment that EscapeSegment could
// not have written.
func ParseKey(prefix, key string) (group, client string, err error) {
	rest, ok := strings.CutPrefix(key, prefix+dir)
	if !ok {
		return "", "", fmt.Errorf("moves: key %q: not under %s%s", key, prefix, dir)
	}
	g, c, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(c, "/") {
		return "", "", fmt.Errorf("moves: key %q: want %s%s<group>/<client>", key, prefix, dir)
	}
	if group, err = UnescapeSegment(g); err != nil {
		return "", "", fmt.Errorf("moves: key %q: group: %w", key, err)
	}
	if client, err = UnescapeSegment(c); err != nil {
		return "", "", fmt.Errorf("moves: key %q: client: %w", key, err)
	}
	return group, client, nil
}

// unreserved are the bytes EscapeSegment keeps as they are (RFC 3986's
// unreserved characters).
func unreserved(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_' || b == '.' || b == '~'
}

const upperHex = "0123456789ABCDEF"

// EscapeSegment makes any string one key segment: bytes outside RFC 3986's
// unreserved characters (A-Z a-z 0-9 - _ . ~) become %XX, upper-case hex.
// The empty string becomes "%" alone, so that no segment is empty. The
// escaping is canonical: two different strings never give the same
// segment, and UnescapeSegment accepts only what EscapeSegment writes.
func EscapeSegment(s string) string {
	if s == "" {
		return "%"
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

// UnescapeSegment reverses EscapeSegment. It refuses anything
// EscapeSegment does not write: an empty segment, a byte that should have
// been escaped, %XX with lower-case or non-hex digits or cut short, and an
// escaped unreserved byte.
func UnescapeSegment(seg string) (string, error) {
	if seg == "%" {
		return "", nil
	}
	if seg == "" {
		return "", fmt.Errorf("segment is empty, want %q for the empty string", "%")
	}
	if !strings.Contains(seg, "%") {
		for i := 0; i < len(seg); i++ {
			if !unreserved(seg[i]) {
				return "", fmt.Errorf("segment %q: byte %q at %d must be escaped as %%%02X", seg, seg[i], i, seg[i])
			}
		}
		return seg, nil
	}
	out := make([]byte, 0, len(seg))
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '%' {
			if !unreserved(c) {
				return "", fmt.Errorf("segment %q: byte %q at %d must be escaped as %%%02X", seg, c, i, c)
			}
			out = append(out, c)
			continue
		}
		if i+2 >= len(seg) {
			return "", fmt.Errorf("segment %q: %% at %d cut short, want %%XX with upper-case hex digits", seg, i)
		}
		hi, lo := unhex(seg[i+1]), unhex(seg[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("segment %q: %q at %d: want %%XX with upper-case hex digits", seg, seg[i:i+3], i)
		}
		b := byte(hi<<4 | lo)
		if unreserved(b) {
			return "", fmt.Errorf("segment %q: %q at %d escapes %q, which must be written as it is", seg, seg[i:i+3], i, b)
		}
		out = append(out, b)
		i += 2
	}
	return string(out), nil
}

// unhex is the value of an upper-case hex digit, or -1.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
