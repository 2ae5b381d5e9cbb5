package httpdoor

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
)

// appendJSONEntry appends e as one JSON line of the access log:
//
//	{"time":"2026-01-02T15:04:05.000Z","client":"127.0.0.1:50312","method":"GET","path":"/prime/7","proto":"HTTP/1.1","status":307,"replica":"r1","duration_ms":0.042,"bytes":0}
//
// The keys and values are those of the logfmt line; status is the one to
// log (200 for an entry that recorded none) and d the request's duration.
func appendJSONEntry(b []byte, e *lean.Entry, status int, replica string, d time.Duration) []byte {
	b = append(b, `{"time":"`...)
	b = e.Start.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","client":`...)
	b = appendJSONString(b, e.Client)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, e.Method)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, e.Target)
	b = append(b, `,"proto":`...)
	b = appendJSONString(b, e.Proto)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"replica":`...)
	b = appendJSONString(b, replica)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', 3, 64)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, e.Bytes, 10)
	b = append(b, "}\n"...)
	return b
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, each byte of invalid UTF-8 replaced by
// U+FFFD, as encoding/json does. It allocates nothing.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
