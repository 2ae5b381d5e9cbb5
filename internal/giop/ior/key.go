package ior

import (
	"fmt"
	"strings"
)

// Object keys in corbaloc URLs (CORBA 3.x, ORB Interoperability Architecture
// chapter, "corbaloc URL": key_string) are octets written as URL characters,
// any of them as a %xx escape.

// unescapeKey decodes %xx escapes; other characters stand for themselves.
func unescapeKey(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			out = append(out, c)
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return nil, fmt.Errorf("bad %%xx escape at character %d", i)
		}
		out = append(out, unhex(s[i+1])<<4|unhex(s[i+2]))
		i += 2
	}
	return out, nil
}

// keyUnreserved reports whether c may appear unescaped in a corbaloc key
// (the URL's unreserved and reserved characters other than "%").
func keyUnreserved(c byte) bool {
	return isAlnum(c) || strings.IndexByte(";/:?@&=+$,-_.!~*'()", c) >= 0
}

// escapeKey writes key with every octet that is not a permitted URL
// character escaped as %XX.
func escapeKey(b *strings.Builder, key []byte) {
	const digits = "0123456789ABCDEF"
	for _, k := range key {
		if keyUnreserved(k) {
			b.WriteByte(k)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(digits[k>>4])
		b.WriteByte(digits[k&15])
	}
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
