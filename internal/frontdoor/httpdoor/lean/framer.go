package lean

import (
	"bufio"
	"bytes"
	"net/http"
)

// This file is the framing guard's core: a pure follower of a client's
// request byte stream as net/http's server reads it (Go 1.26 net/http
// server.go readRequest, transfer.go readTransfer, internal/chunked.go),
// which records for every request head the framing facts RFC 9112 judges
// and net/http does not. No I/O; fed the bytes net/http reads, in order.
//
// Where it cannot be sure to read the stream as net/http does — input
// net/http refuses, or accepts by rules the follower does not copy (bare LF
// in a chunk line, large chunk lines or trailers, ...) — it stops: lost.
// It never goes on with a different idea of where a request starts.

// Framing is what the guard learnt of one request head.
type Framing struct {
	// Conflict: an HTTP/1.1 request with Content-Length and
	// Transfer-Encoding. net/http frames it by the latter and drops the
	// former; RFC 9112 §6.3 asks the connection to be closed after the
	// answer.
	Conflict bool
	// TE10: an HTTP/1.0 request with Transfer-Encoding, faulty framing
	// (RFC 9112 §6.1), which net/http frames by Content-Length: answer 400
	// and close.
	TE10 bool
	// Passthrough: an Upgrade or CONNECT request, or another protocol
	// (HTTP/2's preface): the guard no longer follows the connection,
	// which may be switched. Its answer closes the connection unless it
	// switches protocols.
	Passthrough bool
}

// stage is where the follower is in the stream.
type stage uint8

const (
	stHead        stage = iota // in a request head (or the CR/LF before it)
	stBody                     // in a body framed by length: remain bytes left
	stChunkLine                // in a chunk-size line
	stChunkData                // in a chunk's data: remain bytes left
	stChunkEnd                 // in the CRLF after a chunk's data (crlf bytes seen)
	stTrailer                  // in the trailer section after the last chunk
	stPassthrough              // no longer following: an upgrade, CONNECT, HTTP/2
	stLost                     // no longer following: could not read as net/http does
)

// Limits of what the follower reads; beyond them it is lost (net/http may
// still take the input: fail safe).
const (
	// guardMaxHead bounds a head: above what net/http reads of one
	// before it answers 431 (MaxHeaderBytes with its slop).
	guardMaxHead = MaxHeaderBytes + 8<<10
	// guardMaxLine bounds a chunk-size line and the trailer section
	// (net/http: 4096, the size of its reader's buffer).
	guardMaxLine = 1024
	// guardMaxExcess is net/http's bound of a chunked body's overhead
	// (chunkedReader.excess), less a margin: lost first.
	guardMaxExcess = 16<<10 - 64
	// postCRLF is how many CR or LF bytes net/http discards before the
	// request that follows a POST.
	postCRLF = 4
)

// framer follows a request stream. Not safe for concurrent use.
type framer struct {
	st stage
	// head holds the head being read (stHead), the chunk-size line
	// (stChunkLine) or the trailer section (stTrailer).
	head []byte
	// lineStart is where the line being scanned starts in head; lines
	// how many lines of the head are complete.
	lineStart, lines int
	remain           int64
	crlf             int
	// skip: CR/LF bytes still to discard before the head (after a POST).
	skip int
	// excess is the chunked body's overhead (as net/http counts it).
	excess int64
	// rh is the lean parser's view of the head.
	rh reqHead
	// hr reads a head for http.ReadRequest (heads the lean parser hands
	// over).
	hr *bufio.Reader
	br bytes.Reader
	// push receives the framing of each head, in order.
	push func(Framing)
	// trace, when set, sees each request's head and body length (tests).
	trace func(head []byte, body int64)
	body  int64
}

// feed follows p, the next bytes of the stream.
func (f *framer) feed(p []byte) {
	for len(p) > 0 {
		switch f.st {
		case stPassthrough, stLost:
			return
		case stHead:
			p = f.feedHead(p)
		case stBody, stChunkData:
			n := int64(len(p))
			if n > f.remain {
				n = f.remain
			}
			f.remain -= n
			f.body += n
			p = p[n:]
			if f.remain == 0 {
				if f.st == stBody {
					f.endRequest()
				} else {
					f.st, f.crlf = stChunkEnd, 0
				}
			}
		case stChunkEnd:
			if p[0] != "\r\n"[f.crlf] {
				f.lose()
				return
			}
			p = p[1:]
			if f.crlf++; f.crlf == 2 {
				f.st = stChunkLine
				f.head = f.head[:0]
			}
		case stChunkLine:
			p = f.feedChunkLine(p)
		case stTrailer:
			p = f.feedTrailer(p)
		}
	}
}

// lose stops following the stream.
func (f *framer) lose() {
	f.st = stLost
	f.head = nil
}

// lost reports whether the follower stopped because it could not read
// the stream as net/http does.
func (f *framer) lost() bool { return f.st == stLost }

// startHead prepares for the next request head.
func (f *framer) startHead() {
	f.st = stHead
	if cap(f.head) > ReadBuffer {
		f.head = nil // let a large head's buffer go
	}
	f.head = f.head[:0]
	f.lineStart, f.lines = 0, 0
}

// feedHead reads head bytes from p; it returns what follows the head.
func (f *framer) feedHead(p []byte) []byte {
	for f.skip > 0 && len(f.head) == 0 && len(p) > 0 {
		if p[0] != '\r' && p[0] != '\n' {
			f.skip = 0
			break
		}
		p = p[1:]
		f.skip--
	}
	if len(p) == 0 {
		return p
	}
	f.skip = 0
	// Scan p line by line for the head's empty line; lines are ended by
	// LF, a CR before it dropped (as bufio.Reader.ReadLine does).
	from := 0
	for {
		i := bytes.IndexByte(p[from:], '\n')
		if i < 0 {
			break
		}
		i += from
		// The line: from lineStart (an offset in head, then p) to i.
		n := len(f.head) + i - f.lineStart
		empty := n == 0 || (n == 1 && f.lineByte(p) == '\r')
		from = i + 1
		f.lines++
		if empty && f.lines > 1 {
			if len(f.head)+from > guardMaxHead {
				f.lose()
				return nil
			}
			f.head = append(f.head, p[:from]...)
			f.endHead()
			return p[from:]
		}
		f.lineStart = len(f.head) + from
	}
	if len(f.head)+len(p) > guardMaxHead {
		f.lose()
		return nil
	}
	f.head = append(f.head, p...)
	return nil
}

// lineByte is the first byte of the line being scanned: in head, or else
// in p, which follows head.
func (f *framer) lineByte(p []byte) byte {
	if f.lineStart < len(f.head) {
		return f.head[f.lineStart]
	}
	return p[f.lineStart-len(f.head)]
}

// endHead judges the head in f.head and sets up its body.
func (f *framer) endHead() {
	head := f.head
	var fr Framing
	var length int64
	chunked, post := false, false
	if parseRequest(head, &f.rh) == serveLean {
		// A head the lean path would serve: net/http reads it the same
		// way (FuzzParseRequest), and it is no upgrade.
		chunked, length = f.rh.chunked, max(f.rh.contentLength, 0)
		post = string(f.rh.method.of(head)) == http.MethodPost
		// (Served lean, a head has one Transfer-Encoding field when
		// chunked, none otherwise.)
		fr.Conflict = f.rh.chunked && framingConflict(head)
	} else {
		// Anything else is read by net/http's own parser: the same
		// function its server reads heads with.
		if f.hr == nil {
			f.hr = bufio.NewReaderSize(&f.br, 512)
		}
		f.br.Reset(head)
		f.hr.Reset(&f.br)
		req, err := http.ReadRequest(f.hr)
		f.hr.Reset(nil)
		f.br.Reset(nil)
		if err != nil {
			// net/http refuses it too, and closes the connection.
			f.lose()
			return
		}
		cl, te := framingFields(head)
		switch {
		case req.ProtoMajor != 1:
			fr.Passthrough = true
		case req.ProtoMinor == 0:
			fr.TE10 = te
		default:
			fr.Conflict = cl && te
		}
		if _, up := req.Header["Upgrade"]; up || req.Method == http.MethodConnect {
			fr.Passthrough = true
		}
		chunked = len(req.TransferEncoding) == 1
		length = max(req.ContentLength, 0)
		post = req.Method == http.MethodPost
	}
	if f.trace != nil {
		f.trace(bytes.Clone(head), -1)
	}
	f.push(fr)
	if fr.Passthrough {
		f.st = stPassthrough
		f.head = nil
		return
	}
	f.body = 0
	if post {
		f.skip = postCRLF
	}
	switch {
	case chunked:
		f.st, f.excess = stChunkLine, 0
		f.head = f.head[:0]
	case length > 0:
		f.st, f.remain = stBody, length
	default:
		f.endRequest()
	}
}

// endRequest ends a request's body: a head comes next.
func (f *framer) endRequest() {
	if f.trace != nil {
		f.trace(nil, f.body)
	}
	f.startHead()
}

// feedChunkLine reads a chunk-size line from p; it returns what follows.
func (f *framer) feedChunkLine(p []byte) []byte {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		if len(f.head)+len(p) > guardMaxLine {
			f.lose()
			return nil
		}
		f.head = append(f.head, p...)
		return nil
	}
	if len(f.head)+i+1 > guardMaxLine {
		f.lose()
		return nil
	}
	f.head = append(f.head, p[:i+1]...)
	p = p[i+1:]
	// net/http: CRLF-terminated, no other CR; blanks before the end
	// trimmed, the extension from ';' cut off, then hex digits.
	line := f.head
	if cr := bytes.IndexByte(line, '\r'); cr < 0 || cr != len(line)-2 {
		f.lose()
		return nil
	}
	line = line[:len(line)-2]
	f.excess += int64(len(line)) + 2
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1]
	}
	if semi := bytes.IndexByte(line, ';'); semi >= 0 {
		line = line[:semi]
	}
	if len(line) == 0 || len(line) > 15 {
		f.lose()
		return nil
	}
	var n int64
	for _, c := range line {
		switch {
		case isDigit(c):
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			f.lose()
			return nil
		}
		n = n<<4 | int64(c)
	}
	f.excess = max(f.excess-16-2*n, 0)
	if f.excess > guardMaxExcess {
		f.lose()
		return nil
	}
	f.head = f.head[:0]
	if n == 0 {
		f.st = stTrailer
		return p
	}
	f.st, f.remain = stChunkData, n
	return p
}

// feedTrailer reads the trailer section after the last chunk from p; it
// returns what follows. net/http ends it at a first CRLF, or reads fields
// up to an empty line; the follower takes only plain fields, each line
// ended by CRLF (so that both ends are the same).
func (f *framer) feedTrailer(p []byte) []byte {
	for len(p) > 0 {
		c := p[0]
		p = p[1:]
		if len(f.head) == guardMaxLine {
			f.lose()
			return nil
		}
		f.head = append(f.head, c)
		if c != '\n' {
			continue
		}
		// A line is complete: head[start:], with its LF.
		start := bytes.LastIndexByte(f.head[:len(f.head)-1], '\n') + 1
		line := f.head[start:]
		if len(line) < 2 || line[len(line)-2] != '\r' {
			f.lose()
			return nil
		}
		if len(line) == 2 {
			f.endRequest()
			return p
		}
		if !plainField(line[:len(line)-2]) {
			f.lose()
			return nil
		}
	}
	return p
}

// plainField reports whether line is a field line every reader takes
// alike: a token, a colon, then visible ASCII, spaces and tabs.
func plainField(line []byte) bool {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 || !isToken(line[:colon]) {
		return false
	}
	for _, c := range line[colon+1:] {
		if (c < 0x20 && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// ErrTE10 is the error a request whose Framing has TE10 is answered with:
// the 400 the engine answers such a head with itself.
var ErrTE10 error = &BadRequestError{Status: http.StatusBadRequest, Message: "malformed request: " + whyTE10}
