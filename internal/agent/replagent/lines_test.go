package replagent

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzLineReader holds the stream's line reader to a plain split of its
// input: the non-blank lines, trimmed, that end with a newline; then
// io.ErrUnexpectedEOF when bytes follow the last newline, io.EOF when none
// do; errLineTooLong as soon as a line passes the bound.
func FuzzLineReader(f *testing.F) {
	for _, s := range []string{"", "\n", "a\nb\n", "  a \r\n\n\nb", "{\"type\":\"hello\"}\n", "x", "aaaaaaaaaaaa\nb\n"} {
		f.Add([]byte(s), 8)
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		lr := lineReader{r: bufio.NewReaderSize(bytes.NewReader(in), 16), max: max}
		segs := bytes.Split(in, []byte("\n"))
		last := segs[len(segs)-1] // after the last newline
		segs = segs[:len(segs)-1]
		for _, seg := range segs {
			if len(seg)+1 > max+1 {
				_, err := lr.next()
				if !errors.Is(err, errLineTooLong) {
					// Blank-but-long lines are too long as well.
					t.Fatalf("a line of %d bytes with max %d: %v, want errLineTooLong", len(seg), max, err)
				}
				return
			}
			want := bytes.TrimSpace(seg)
			if len(want) == 0 {
				continue
			}
			got, err := lr.next()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("line %q: got %q, %v", want, got, err)
			}
		}
		_, err := lr.next()
		switch {
		case len(last) > max+1:
			if !errors.Is(err, errLineTooLong) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("an unterminated tail of %d bytes with max %d: %v", len(last), max, err)
			}
		case len(last) > 0:
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("an unterminated tail %q: %v, want io.ErrUnexpectedEOF", last, err)
			}
		default:
			if err != io.EOF {
				t.Fatalf("at the end: %v, want io.EOF", err)
			}
		}
	})
}
