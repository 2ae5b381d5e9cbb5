package lean

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
)

// This file copies message bodies for the lean path: Content-Length,
// chunked (decoded, checked and encoded again) and close-delimited, from
// one buffered reader to a buffered writer, without allocating.

// source is what a body is read from. A read that may wait first flushes
// what the other side's writer (flush) holds, so that what was copied so
// far moves on. For a member's answer (c not nil) a read that times out
// asks c whether to go on waiting.
type source struct {
	br    *bufio.Reader
	flush *bufio.Writer
	c     *conn
	up    *memberConn
}

// fill returns the next n bytes of src without consuming them; n must not
// exceed the reader's size.
func (src *source) fill(n int) ([]byte, error) {
	for {
		if src.flush != nil && src.br.Buffered() < n && src.flush.Buffered() > 0 {
			if err := src.flush.Flush(); err != nil {
				return nil, &sinkError{err}
			}
		}
		b, err := src.br.Peek(n)
		if err == nil {
			return b, nil
		}
		if src.c == nil {
			return b, err
		}
		if err = src.c.waitUpstream(src.up, err); err != nil {
			return b, err
		}
	}
}

// sinkError is a failure to write a body where it goes.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

func isSinkError(err error) bool {
	var se *sinkError
	return errors.As(err, &se)
}

// errBadChunked is a chunked body that breaks RFC 9112 §7.1.
var errBadChunked = errors.New("lean: malformed chunked body")

// errChunkLine is a chunk-size or trailer line too long for the buffer.
var errChunkLine = errors.New("lean: chunk line too long")

// copyLength copies n bytes from src to dst and returns how many it
// copied.
func copyLength(dst *bufio.Writer, src *source, n int64) (int64, error) {
	var done int64
	for done < n {
		if _, err := src.fill(1); err != nil {
			return done, err
		}
		k := int64(src.br.Buffered())
		k = min(k, n-done)
		p, _ := src.br.Peek(int(k))
		if _, err := dst.Write(p); err != nil {
			return done, &sinkError{err}
		}
		_, _ = src.br.Discard(int(k))
		done += k
	}
	return done, nil
}

// copyToEOF copies src to its end and writes it chunked to dst; it returns
// the bytes of content copied.
func copyToEOF(dst *bufio.Writer, src *source) (int64, error) {
	var done int64
	for {
		if _, err := src.fill(1); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return done, err
		}
		k := src.br.Buffered()
		p, _ := src.br.Peek(k)
		if err := writeChunk(dst, p); err != nil {
			return done, err
		}
		_, _ = src.br.Discard(k)
		done += int64(k)
	}
	if _, err := dst.WriteString("0\r\n\r\n"); err != nil {
		return done, &sinkError{err}
	}
	return done, nil
}

// writeChunk writes p as one chunk.
func writeChunk(dst *bufio.Writer, p []byte) error {
	if err := writeChunkSize(dst, int64(len(p))); err != nil {
		return &sinkError{err}
	}
	if _, err := dst.Write(p); err != nil {
		return &sinkError{err}
	}
	if _, err := dst.WriteString("\r\n"); err != nil {
		return &sinkError{err}
	}
	return nil
}

// writeChunkSize writes a chunk's size line.
func writeChunkSize(dst *bufio.Writer, n int64) error {
	h := strconv.AppendUint(dst.AvailableBuffer(), uint64(n), 16)
	h = append(h, '\r', '\n')
	if _, err := dst.Write(h); err != nil {
		return &sinkError{err}
	}
	return nil
}

// copyChunked decodes the chunked body at the start of src and writes it
// chunked to dst, chunk by chunk (extensions dropped). Trailer fields are
// written when trailers is true, dropped otherwise. strict refuses lines
// that end with a bare LF. It returns the bytes of content copied.
func copyChunked(dst *bufio.Writer, src *source, trailers, strict bool) (int64, error) {
	var done int64
	for {
		line, next, err := readLine(src, strict)
		if err != nil {
			return done, err
		}
		size, ok := chunkSize(line)
		_, _ = src.br.Discard(next)
		if !ok {
			return done, errBadChunked
		}
		if size == 0 {
			break
		}
		if err := writeChunkSize(dst, size); err != nil {
			return done, err
		}
		n, err := copyLength(dst, src, size)
		done += n
		if err != nil {
			return done, err
		}
		// The CRLF after the chunk's data.
		line, next, err = readLine(src, strict)
		if err != nil {
			return done, err
		}
		_, _ = src.br.Discard(next)
		if len(line) != 0 {
			return done, errBadChunked
		}
		if _, err := dst.WriteString("\r\n"); err != nil {
			return done, &sinkError{err}
		}
	}
	if _, err := dst.WriteString("0\r\n"); err != nil {
		return done, &sinkError{err}
	}
	// The trailer section, up to its empty line.
	for {
		line, next, err := readLine(src, strict)
		if err != nil {
			return done, err
		}
		if len(line) == 0 {
			_, _ = src.br.Discard(next)
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return done, errBadChunked
		}
		f, ok := parseField(line, 0, len(line))
		if !ok || f.name.empty() {
			return done, errBadChunked
		}
		if trailers {
			if _, err := dst.Write(line); err != nil {
				return done, &sinkError{err}
			}
			if _, err := dst.WriteString("\r\n"); err != nil {
				return done, &sinkError{err}
			}
		}
		_, _ = src.br.Discard(next)
	}
	if _, err := dst.WriteString("\r\n"); err != nil {
		return done, &sinkError{err}
	}
	return done, nil
}

// readLine returns the next line of src without its line end, and the
// bytes to discard to consume it. The line is valid until src is read
// again.
func readLine(src *source, strict bool) (line []byte, next int, err error) {
	for {
		n := src.br.Buffered()
		b, _ := src.br.Peek(n)
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			end := i
			if end > 0 && b[end-1] == '\r' {
				end--
			} else if strict {
				return nil, 0, errBadChunked
			}
			return b[:end], i + 1, nil
		}
		if n >= src.br.Size() {
			return nil, 0, errChunkLine
		}
		if _, err := src.fill(n + 1); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, 0, err
		}
	}
}

// chunkSize parses a chunk-size line: hex digits, then nothing or
// extensions (";..." right after the digits) or trailing blanks, no
// control characters.
func chunkSize(line []byte) (int64, bool) {
	var n int64
	i := 0
	for ; i < len(line) && isHex(line[i]); i++ {
		if n > 1<<58 {
			return 0, false
		}
		c := line[i]
		var d byte
		switch {
		case c <= '9':
			d = c - '0'
		case c >= 'a':
			d = c - 'a' + 10
		default:
			d = c - 'A' + 10
		}
		n = n<<4 | int64(d)
	}
	if i == 0 {
		return 0, false
	}
	rest := line[i:]
	for _, c := range rest {
		if isCTL(c) && c != '\t' {
			return 0, false
		}
	}
	// Extensions start right after the digits: RFC 9112 allows blanks
	// before the ";", but net/http refuses them, and a Go replica behind
	// the proxy must not read the body differently from it. Trailing
	// blanks alone are accepted, as net/http does.
	if len(rest) > 0 && rest[0] != ';' && len(bytes.TrimLeft(rest, " \t")) > 0 {
		return 0, false
	}
	return n, true
}
