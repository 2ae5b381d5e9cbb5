package lean

import (
	"bytes"
	"strconv"
)

// This file is the lean path's HTTP/1.1 head parser: pure functions over a
// buffer, no I/O and no allocation. A request head gets one of four
// verdicts:
//
//   - serveLean: a plain HTTP/1.1 request the lean path proxies itself;
//   - handOver: anything else net/http can judge (HTTP/1.0, HTTP/2 prior
//     knowledge, Upgrade, Expect, CONNECT, OPTIONS *, absolute targets,
//     obs-folded or bare-LF lines, transfer codings other than chunked,
//     targets net/http would re-escape, heads larger than the buffer);
//   - malformed: input net/http rejects too (400), answered by the lean
//     path with a JSON error naming the problem — and two that RFC 9112
//     refuses where net/http takes them: an authority-form target
//     without CONNECT, Transfer-Encoding in an HTTP/1.0 request;
//   - needMore: the head is not complete in the buffer yet.
//
// The invariant the fuzz test checks against net/http's own parser: a head
// is malformed only if net/http rejects it, and one served lean is parsed
// by net/http to the same method, target, fields and body framing.

// span is a part of a head: head[i:j].
type span struct{ i, j int }

func (s span) of(b []byte) []byte { return b[s.i:s.j] }

func (s span) empty() bool { return s.i == s.j }

// verdict is what the lean path does with a head.
type verdict uint8

const (
	needMore verdict = iota
	serveLean
	handOver
	malformed
	// tooLarge: a head beyond MaxHeaderBytes (readRequestHead's verdict;
	// parseRequest does not know the bound).
	tooLarge
)

// maxLeanFields bounds the header fields of a head served lean; heads with
// more are handed over (requests) or refused (responses).
const maxLeanFields = 128

// fieldKind names the header fields the proxy treats specially.
type fieldKind uint8

const (
	fOther fieldKind = iota
	fHost
	fContentLength
	fTransferEncoding
	fConnection
	fKeepAlive
	fProxyConnection
	fProxyAuthenticate
	fProxyAuthorization
	fTE
	fTrailer
	fUpgrade
	fForwarded
	fXForwardedFor
	fXForwardedHost
	fXForwardedProto
	fExpect
	fContentType
	fFulcrumClient
	fFulcrumCost
	fDate
)

// field is one header field line: its name and its value (trimmed of
// spaces and tabs).
type field struct {
	name, value span
	kind        fieldKind
}

// headCommon is what request and response heads share.
type headCommon struct {
	// n is the length of the head, its final empty line included.
	n      int
	fields []field
	// contentLength is -1 when the head has none (or chunked overrides it).
	contentLength int64
	chunked       bool
	// close: the connection ends after this message (Connection:
	// close; or a request with Content-Length and Transfer-Encoding).
	close bool
	// keepAlive: Connection: keep-alive (HTTP/1.0 responses).
	keepAlive bool
	// connTokens are the Connection tokens other than close, keep-alive
	// and upgrade: names of further hop-by-hop fields.
	connTokens []span
	// why says what is malformed.
	why string
}

func (h *headCommon) reset() {
	h.n = 0
	h.fields = h.fields[:0]
	h.contentLength = -1
	h.chunked = false
	h.close = false
	h.keepAlive = false
	h.connTokens = h.connTokens[:0]
	h.why = ""
}

// hopByHop reports whether f is not forwarded as is: a hop-by-hop field
// (RFC 9110 §7.6.1, and those net/http's ReverseProxy strips), or one named
// by the Connection field.
func (h *headCommon) hopByHop(b []byte, f *field) bool {
	switch f.kind {
	case fConnection, fKeepAlive, fProxyConnection, fProxyAuthenticate, fProxyAuthorization,
		fTE, fTransferEncoding, fUpgrade:
		return true
	}
	if len(h.connTokens) > 0 {
		name := f.name.of(b)
		for _, t := range h.connTokens {
			if asciiEqualFold(name, t.of(b)) {
				return true
			}
		}
	}
	return false
}

// reqHead is a request head parsed by parseRequest. Its spans index the
// buffer it was parsed from. Reused from request to request; not safe for
// concurrent use.
type reqHead struct {
	headCommon
	method, target span
	// path is the target up to '?'; query what follows it (may be empty).
	path, query span
	// escaped: path holds %-escapes.
	escaped    bool
	host       span
	teTrailers bool
}

// resHead is a response head parsed by parseResponse.
type resHead struct {
	headCommon
	status int
	reason span
	// minor is the HTTP/1 minor version of the response.
	minor       int
	eventStream bool
	hasDate     bool
}

// nextLine finds the line that starts at off in b. It returns the end of
// the line's content and the start of the next line; crlf says whether the
// line ended with CRLF rather than a bare LF. ok is false when b holds no
// complete line at off.
func nextLine(b []byte, off int) (end, next int, crlf, ok bool) {
	i := bytes.IndexByte(b[off:], '\n')
	if i < 0 {
		return 0, 0, false, false
	}
	end = off + i
	next = end + 1
	if end > off && b[end-1] == '\r' {
		return end - 1, next, true, true
	}
	return end, next, false, true
}

// parseRequest parses the request head at the start of b into h.
func parseRequest(b []byte, h *reqHead) verdict {
	h.reset()
	h.method, h.target, h.path, h.query, h.host = span{}, span{}, span{}, span{}, span{}
	h.escaped, h.teTrailers = false, false

	end, next, crlf, ok := nextLine(b, 0)
	if !ok {
		// Refuse garbage early instead of waiting for a line end that
		// may never come (binary input, a TLS handshake).
		for i, c := range b {
			if isCTL(c) && !(c == '\r' && i == len(b)-1) {
				h.why = "control character in the request line"
				return malformed
			}
		}
		return needMore
	}
	if end == 0 {
		// An empty line before the request: tolerated by net/http.
		return handOver
	}
	if !crlf {
		return handOver
	}
	line := b[:end]
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 < 0 {
		h.why = "malformed request line"
		return malformed
	}
	sp2 := bytes.IndexByte(line[sp1+1:], ' ')
	if sp2 < 0 {
		h.why = "malformed request line"
		return malformed
	}
	sp2 += sp1 + 1
	h.method = span{0, sp1}
	h.target = span{sp1 + 1, sp2}
	version := line[sp2+1:]
	if sp1 == 0 || !isToken(line[:sp1]) {
		h.why = "invalid method"
		return malformed
	}
	if string(version) != "HTTP/1.1" {
		if len(version) == 8 && string(version[:5]) == "HTTP/" && isDigit(version[5]) &&
			version[6] == '.' && isDigit(version[7]) {
			if string(version) == "HTTP/1.0" {
				return h.http10(b, next)
			}
			// The HTTP/2 preface, versions net/http answers 505.
			return handOver
		}
		h.why = "malformed HTTP version"
		return malformed
	}
	target := line[sp1+1 : sp2]
	if len(target) == 0 {
		h.why = "empty request target"
		return malformed
	}
	for _, c := range target {
		if isCTL(c) {
			h.why = "control character in the request target"
			return malformed
		}
	}
	if target[0] != '/' || string(line[:sp1]) == "CONNECT" {
		// OPTIONS *, absolute forms, CONNECT. The authority form
		// (host:port) is CONNECT's alone (RFC 9112 §3.2.3): net/http
		// reads it as an opaque URI, which would be forwarded as "/".
		if string(line[:sp1]) != "CONNECT" && string(target) != "*" && !absoluteForm(target) {
			h.why = whyAuthorityForm
			return malformed
		}
		return handOver
	}
	if v := h.parseTarget(target, sp1+1); v != serveLean {
		return v
	}

	// Header fields: what net/http takes and the lean path does not goes
	// to net/http.
	if v := h.readFields(b, next, true, handOver); v != serveLean {
		return v
	}
	return h.requestFields(b)
}

// parseTarget checks an origin-form target (at offset base of the buffer):
// what net/http would forward unchanged is served lean; paths it would
// re-escape and queries it would re-encode are handed over.
func (h *reqHead) parseTarget(t []byte, base int) verdict {
	q := bytes.IndexByte(t, '?')
	p := t
	if q >= 0 {
		p = t[:q]
		h.query = span{base + q + 1, base + len(t)}
	} else {
		h.query = span{base + len(t), base + len(t)}
	}
	h.path = span{base, base + len(p)}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				h.why = "invalid escape in the request path"
				return malformed
			}
			h.escaped = true
			i += 2
		case !pathByte[c]:
			return handOver
		}
	}
	if q >= 0 {
		qs := t[q+1:]
		for i := 0; i < len(qs); i++ {
			c := qs[i]
			switch {
			case c >= 0x80, c == ';':
				return handOver
			case c == '%':
				if i+2 >= len(qs) || !isHex(qs[i+1]) || !isHex(qs[i+2]) {
					return handOver
				}
				i += 2
			}
		}
	}
	return serveLean
}

// requestFields interprets a request's fields.
func (h *reqHead) requestFields(b []byte) verdict {
	hosts := 0
	var cl span
	te := 0
	for i := range h.fields {
		f := &h.fields[i]
		v := f.value.of(b)
		switch f.kind {
		case fHost:
			hosts++
			h.host = f.value
			for _, c := range v {
				if !hostByte[c] {
					h.why = "malformed Host header"
					return malformed
				}
			}
		case fContentLength:
			if len(v) == 0 {
				h.why = "empty Content-Length"
				return malformed
			}
			if !h.contentLengthField(b, f.value, &cl) {
				return malformed
			}
		case fTransferEncoding:
			te++
			if !asciiEqualFold(v, []byte("chunked")) {
				return handOver
			}
		case fConnection:
			if h.connectionTokens(b, f.value) {
				return handOver
			}
		case fUpgrade, fExpect:
			return handOver
		case fTE:
			if hasToken(v, "trailers") {
				h.teTrailers = true
			}
		case fContentType:
			if bytes.HasPrefix(v, []byte("application/grpc")) {
				// gRPC calls are not bounded by the request timeout.
				return handOver
			}
		}
	}
	if hosts == 0 {
		h.why = "missing required Host header"
		return malformed
	}
	if hosts > 1 {
		h.why = "too many Host headers"
		return malformed
	}
	if te > 1 {
		return handOver
	}
	if te == 1 {
		if cl.j != 0 {
			// Content-Length with Transfer-Encoding: framed by the
			// latter, the former not forwarded, and the connection
			// closed after the answer (RFC 9112 §6.1, §6.3), so that a
			// peer that framed it by the length cannot smuggle a request.
			h.close = true
		}
		h.chunked = true
		h.contentLength = -1
	}
	return serveLean
}

// Reasons for refusing what net/http would take: RFC 9112 is the
// reference there (the fuzz test checks these apart).
const (
	whyAuthorityForm = "request target in authority form, which only CONNECT takes"
	whyTE10          = "Transfer-Encoding in an HTTP/1.0 request (faulty framing)"
)

// http10 judges an HTTP/1.0 head whose fields start at off: one with a
// Transfer-Encoding field is malformed (RFC 9112 §6.1: faulty framing —
// net/http would ignore the field and frame by Content-Length where
// another proxy frames by chunks); the others go to net/http once whole.
func (h *reqHead) http10(b []byte, off int) verdict {
	te := false
	for {
		end, next, _, ok := nextLine(b, off)
		switch {
		case !ok:
			return needMore
		case end == off:
			if te {
				h.why = whyTE10
				return malformed
			}
			return handOver
		case b[off] != ' ' && b[off] != '\t':
			if colon := bytes.IndexByte(b[off:end], ':'); colon >= 0 &&
				asciiEqualFold(b[off:off+colon], []byte("Transfer-Encoding")) {
				te = true
			}
		}
		off = next
	}
}

// absoluteForm reports whether t starts like an absolute-form target
// with an authority or a path: scheme ":/" (RFC 3986 §3.1).
func absoluteForm(t []byte) bool {
	if len(t) == 0 || !isAlpha(t[0]) {
		return false
	}
	for i := 1; i < len(t); i++ {
		switch c := t[i]; {
		case isAlpha(c), isDigit(c), c == '+', c == '-', c == '.':
		case c == ':':
			return i+1 < len(t) && t[i+1] == '/'
		default:
			return false
		}
	}
	return false
}

// headLength is the length of the head at the start of b, up to its empty
// line (lines end with LF or CRLF); 0 when b holds no whole head.
func headLength(b []byte) int {
	for off := 0; ; {
		end, next, _, ok := nextLine(b, off)
		switch {
		case !ok:
			return 0
		case end == off && off > 0:
			return next
		}
		off = next
	}
}

// emptyLines is the length of the empty lines (CRLF) at the start of b,
// which a server ignores before a request line (RFC 9112 §2.2).
func emptyLines(b []byte) int {
	n := 0
	for len(b) >= n+2 && b[n] == '\r' && b[n+1] == '\n' {
		n += 2
	}
	return n
}

// framingConflict reports whether the head at the start of b (complete
// or not) has both a Content-Length and a Transfer-Encoding field: a
// request net/http frames by the latter and would keep the connection of.
func framingConflict(b []byte) bool {
	cl, te := framingFields(b)
	return cl && te
}

// framingFields reports whether the head at the start of b (complete or
// not) has a Content-Length field, and a Transfer-Encoding field.
func framingFields(b []byte) (cl, te bool) {
	_, off, _, ok := nextLine(b, 0)
	for ok && !(cl && te) {
		var end, next int
		end, next, _, ok = nextLine(b, off)
		if !ok || end == off {
			break
		}
		if colon := bytes.IndexByte(b[off:end], ':'); colon >= 0 {
			name := bytes.TrimRight(b[off:off+colon], " \t")
			cl = cl || asciiEqualFold(name, []byte("Content-Length"))
			te = te || asciiEqualFold(name, []byte("Transfer-Encoding"))
		}
		off = next
	}
	return cl, te
}

// connectionTokens reads a Connection field's tokens; it reports whether
// one asks for an upgrade.
func (h *headCommon) connectionTokens(b []byte, s span) (upgrade bool) {
	v, base := s.of(b), s.i
	for i := 0; i < len(v); {
		j := bytes.IndexByte(v[i:], ',')
		if j < 0 {
			j = len(v)
		} else {
			j += i
		}
		lo, hi := i, j
		for lo < hi && (v[lo] == ' ' || v[lo] == '\t') {
			lo++
		}
		for hi > lo && (v[hi-1] == ' ' || v[hi-1] == '\t') {
			hi--
		}
		tok := v[lo:hi]
		switch {
		case len(tok) == 0:
		case asciiEqualFold(tok, []byte("close")):
			h.close = true
		case asciiEqualFold(tok, []byte("keep-alive")):
			h.keepAlive = true
		case asciiEqualFold(tok, []byte("upgrade")):
			upgrade = true
		default:
			h.connTokens = append(h.connTokens, span{base + lo, base + hi})
		}
		i = j + 1
	}
	return upgrade
}

// parseResponse parses the response head at the start of b into h; the
// verdicts are needMore, serveLean or malformed. A response to a HEAD
// request, 1xx, 204 and 304 responses have no body whatever their fields
// say; the caller applies that.
func parseResponse(b []byte, h *resHead) verdict {
	h.reset()
	h.status, h.reason, h.minor, h.eventStream, h.hasDate = 0, span{}, 0, false, false
	end, next, _, ok := nextLine(b, 0)
	if !ok {
		return needMore
	}
	line := b[:end]
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || !isDigit(line[7]) || line[8] != ' ' ||
		!isDigit(line[9]) || !isDigit(line[10]) || !isDigit(line[11]) || (len(line) > 12 && line[12] != ' ') {
		h.why = "malformed status line"
		return malformed
	}
	h.minor = int(line[7] - '0')
	h.status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	if h.status < 100 {
		h.why = "malformed status code"
		return malformed
	}
	if len(line) > 12 {
		h.reason = span{13, end}
		for _, c := range line[13:] {
			if isCTL(c) && c != '\t' {
				h.why = "control character in the status line"
				return malformed
			}
		}
	}
	// Header fields: an answer the lean path cannot read is malformed (a
	// bare LF line end is taken, as net/http's Transport does).
	if v := h.readFields(b, next, false, malformed); v != serveLean {
		return v
	}
	var cl span
	for i := range h.fields {
		f := &h.fields[i]
		v := f.value.of(b)
		switch f.kind {
		case fContentLength:
			if !h.contentLengthField(b, f.value, &cl) {
				return malformed
			}
		case fTransferEncoding:
			if h.chunked || !asciiEqualFold(v, []byte("chunked")) {
				h.why = "unsupported transfer encoding"
				return malformed
			}
			h.chunked = true
		case fConnection:
			h.connectionTokens(b, f.value)
		case fContentType:
			h.eventStream = isEventStreamBytes(v)
		case fDate:
			h.hasDate = true
		}
	}
	if h.chunked {
		if h.minor == 0 {
			h.why = "chunked HTTP/1.0 response"
			return malformed
		}
		h.contentLength = -1
	}
	if h.minor == 0 && !h.keepAlive {
		h.close = true
	}
	return serveLean
}

// readFields reads the head's field lines from off up to the blank line
// that ends it, and sets h.n. A line not ended by CRLF (when crlf is
// asked), obsolete line folding and more than maxLeanFields fields are
// beyond the lean path: they get unsupported (handOver for a client's
// request, which net/http can still take; malformed for a member's
// answer). A line that is no field is malformed.
func (h *headCommon) readFields(b []byte, off int, crlf bool, unsupported verdict) verdict {
	for {
		end, next, isCRLF, ok := nextLine(b, off)
		switch {
		case !ok:
			return needMore
		case crlf && !isCRLF:
			h.why = "header line not ended by CRLF"
			return unsupported
		case end == off:
			h.n = next
			return serveLean
		case b[off] == ' ' || b[off] == '\t':
			h.why = "obsolete line folding"
			return unsupported
		case len(h.fields) == maxLeanFields:
			h.why = "too many header fields"
			return unsupported
		}
		f, ok := parseField(b, off, end)
		if !ok {
			h.why = "malformed header field line"
			return malformed
		}
		if f.name.empty() {
			h.why = "empty header field name"
			return malformed
		}
		h.fields = append(h.fields, f)
		off = next
	}
}

// contentLengthField takes a Content-Length field's value (at s): a
// repeat must equal the first (cl: the zero span until one is seen, since
// no field starts at offset 0), and the value
// must be a length. It sets h.contentLength, or h.why and reports false.
func (h *headCommon) contentLengthField(b []byte, s span, cl *span) bool {
	v := s.of(b)
	if cl.j != 0 && string(v) != string(cl.of(b)) {
		h.why = "differing Content-Length fields"
		return false
	}
	n, ok := parseLength(v)
	if !ok {
		h.why = "bad Content-Length"
		return false
	}
	*cl, h.contentLength = s, n
	return true
}

// parseField parses the field line b[off:end].
func parseField(b []byte, off, end int) (field, bool) {
	line := b[off:end]
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		return field{}, false
	}
	name := line[:colon]
	if !isToken(name) && len(name) > 0 {
		return field{}, false
	}
	lo, hi := colon+1, len(line)
	for _, c := range line[lo:] {
		if isCTL(c) && c != '\t' {
			return field{}, false
		}
	}
	for lo < hi && (line[lo] == ' ' || line[lo] == '\t') {
		lo++
	}
	for hi > lo && (line[hi-1] == ' ' || line[hi-1] == '\t') {
		hi--
	}
	return field{name: span{off, off + colon}, value: span{off + lo, off + hi}, kind: classify(name)}, true
}

// parseLength parses a Content-Length value: digits, below 2^63.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	if len(v) > 18 {
		// 18 digits always fit in an int64; longer runs (leading zeros)
		// are left to strconv.
		n, err := strconv.ParseUint(string(v), 10, 63)
		return int64(n), err == nil
	}
	var n int64
	for _, c := range v {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// classify names a field.
func classify(name []byte) fieldKind {
	eq := func(s string) bool { return asciiEqualFold(name, []byte(s)) }
	switch len(name) {
	case 2:
		if eq("TE") {
			return fTE
		}
	case 4:
		switch {
		case eq("Host"):
			return fHost
		case eq("Date"):
			return fDate
		}
	case 6:
		if eq("Expect") {
			return fExpect
		}
	case 7:
		switch {
		case eq("Trailer"):
			return fTrailer
		case eq("Upgrade"):
			return fUpgrade
		}
	case 9:
		if eq("Forwarded") {
			return fForwarded
		}
	case 10:
		switch {
		case eq("Connection"):
			return fConnection
		case eq("Keep-Alive"):
			return fKeepAlive
		}
	case 12:
		switch {
		case eq("Content-Type"):
			return fContentType
		case eq("Fulcrum-Cost"):
			return fFulcrumCost
		}
	case 14:
		switch {
		case eq("Content-Length"):
			return fContentLength
		case eq("Fulcrum-Client"):
			return fFulcrumClient
		}
	case 15:
		if eq("X-Forwarded-For") {
			return fXForwardedFor
		}
	case 16:
		switch {
		case eq("Proxy-Connection"):
			return fProxyConnection
		case eq("X-Forwarded-Host"):
			return fXForwardedHost
		}
	case 17:
		switch {
		case eq("Transfer-Encoding"):
			return fTransferEncoding
		case eq("X-Forwarded-Proto"):
			return fXForwardedProto
		}
	case 18:
		if eq("Proxy-Authenticate") {
			return fProxyAuthenticate
		}
	case 19:
		if eq("Proxy-Authorization") {
			return fProxyAuthorization
		}
	}
	return fOther
}

// hasToken reports whether the comma-separated list v holds tok
// (case-insensitively).
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var part []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			part, v = v[:i], v[i+1:]
		} else {
			part, v = v, nil
		}
		if asciiEqualFold(bytes.Trim(part, " \t"), []byte(tok)) {
			return true
		}
	}
	return false
}

func isEventStreamBytes(ct []byte) bool {
	const es = "text/event-stream"
	return len(ct) >= len(es) && asciiEqualFold(ct[:len(es)], []byte(es))
}

// asciiEqualFold compares ASCII case-insensitively.
func asciiEqualFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlpha(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func isCTL(c byte) bool { return c < 0x20 || c == 0x7f }

func isToken(b []byte) bool {
	for _, c := range b {
		if !tokenByte[c] {
			return false
		}
	}
	return len(b) > 0
}

// tokenByte: tchar of RFC 9110 §5.6.2.
var tokenByte = byteSet("!#$%&'*+-.^_`|~" + alnum)

// pathByte: bytes net/url leaves as they are in a path (so that net/http
// forwards a path unchanged); '%' is checked apart.
var pathByte = byteSet("-._~!$&'()*+,;=:@/[]" + alnum)

// hostByte: bytes of a Host field value net/http accepts.
var hostByte = byteSet("!$%&'()*+,-.:;=[]_~" + alnum)

const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func byteSet(s string) (t [256]bool) {
	for i := 0; i < len(s); i++ {
		t[s[i]] = true
	}
	return t
}
