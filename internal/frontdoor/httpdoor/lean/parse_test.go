package lean

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strings"
	"testing"
)

func TestParseRequestVerdicts(t *testing.T) {
	t.Parallel()
	const ok = "Host: fd\r\n\r\n"
	for _, tc := range []struct {
		name string
		in   string
		want verdict
		why  string // part of the reason, for malformed heads
	}{
		{"simple GET", "GET /prime/7?v=1 HTTP/1.1\r\n" + ok, serveLean, ""},
		{"POST with a length", "POST /x HTTP/1.1\r\nContent-Length: 5\r\n" + ok + "hello", serveLean, ""},
		{"chunked POST", "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n" + ok, serveLean, ""},
		{"escaped path", "GET /a%2Fb HTTP/1.1\r\n" + ok, serveLean, ""},
		{"incomplete request line", "GET /prime/7 HT", needMore, ""},
		{"incomplete head", "GET / HTTP/1.1\r\nHost: fd\r\n", needMore, ""},
		{"HTTP/1.0", "GET / HTTP/1.0\r\n\r\n", handOver, ""},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", handOver, ""},
		{"HTTP/9.9", "GET / HTTP/9.9\r\n" + ok, handOver, ""},
		{"asterisk target", "OPTIONS * HTTP/1.1\r\n" + ok, handOver, ""},
		{"absolute target", "GET http://fd/ HTTP/1.1\r\n" + ok, handOver, ""},
		{"CONNECT", "CONNECT fd:443 HTTP/1.1\r\n" + ok, handOver, ""},
		{"upgrade", "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" + ok, handOver, ""},
		{"h2c upgrade", "GET / HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n" + ok, handOver, ""},
		{"expect", "PUT / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n" + ok, handOver, ""},
		{"gzip coding", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n" + ok, handOver, ""},
		{"gRPC", "POST /s/m HTTP/1.1\r\nContent-Type: application/grpc\r\n" + ok, handOver, ""},
		{"bare LF", "GET / HTTP/1.1\nHost: fd\n\n", handOver, ""},
		{"leading empty line", "\r\nGET / HTTP/1.1\r\n" + ok, handOver, ""},
		{"obs-fold", "GET / HTTP/1.1\r\nX-A: 1\r\n 2\r\n" + ok, handOver, ""},
		{"path net/http re-escapes", "GET /a\"b HTTP/1.1\r\n" + ok, handOver, ""},
		{"query net/http re-encodes", "GET /?a=1;b=2 HTTP/1.1\r\n" + ok, handOver, ""},
		{"non-ASCII path", "GET /\xc3\xa4 HTTP/1.1\r\n" + ok, handOver, ""},
		{"garbage", "GARBAGE GARBAGE GARBAGE\r\n\r\n", malformed, "HTTP version"},
		{"no spaces", "GET\r\n" + ok, malformed, "request line"},
		{"bad method", "GE(T / HTTP/1.1\r\n" + ok, malformed, "method"},
		{"binary", "\x16\x03\x01\x02\x00\x01", malformed, "control character"},
		{"control in target", "GET /a\x01b HTTP/1.1\r\n" + ok, malformed, "control character"},
		{"bad escape", "GET /a%zzb HTTP/1.1\r\n" + ok, malformed, "escape"},
		{"missing Host", "GET / HTTP/1.1\r\n\r\n", malformed, "Host"},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\n" + ok, malformed, "Host"},
		{"bad Host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", malformed, "Host"},
		{"no colon", "GET / HTTP/1.1\r\nno colon here\r\n" + ok, malformed, "field"},
		{"space before colon", "GET / HTTP/1.1\r\nX-A : 1\r\n" + ok, malformed, "field"},
		{"control in value", "GET / HTTP/1.1\r\nX-A: 1\x00\r\n" + ok, malformed, "field"},
		{"negative length", "POST / HTTP/1.1\r\nContent-Length: -4\r\n" + ok, malformed, "Content-Length"},
		{"empty length", "POST / HTTP/1.1\r\nContent-Length:\r\n" + ok, malformed, "Content-Length"},
		{"differing lengths", "POST / HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 5\r\n" + ok, malformed, "Content-Length"},
		{"length and chunked", "POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n" + ok, serveLean, ""},
		{"HTTP/1.0 chunked", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n", malformed, "Transfer-Encoding"},
		{"HTTP/1.0 folded after chunked", "POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n x\r\n\r\n", malformed, "Transfer-Encoding"},
		{"incomplete HTTP/1.0", "GET / HTTP/1.0\r\nHost: x\r\n", needMore, ""},
		{"authority form", "GET fd:80 HTTP/1.1\r\n" + ok, malformed, "authority form"},
		{"opaque target", "GET mailto:a HTTP/1.1\r\n" + ok, malformed, "authority form"},
		{"authority form of CONNECT", "CONNECT fd:80 HTTP/1.1\r\n" + ok, handOver, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var h reqHead
			got := parseRequest([]byte(tc.in), &h)
			if got != tc.want {
				t.Fatalf("verdict %d, want %d (why %q)", got, tc.want, h.why)
			}
			if tc.want == malformed && !strings.Contains(h.why, tc.why) {
				t.Errorf("reason %q, want it to mention %q", h.why, tc.why)
			}
		})
	}
}

func TestParseRequestFields(t *testing.T) {
	t.Parallel()
	in := []byte("POST /base/x%20y?q=1&r=%41 HTTP/1.1\r\n" +
		"host:  fd:8080 \r\n" +
		"Connection: keep-alive, X-Hop, close\r\n" +
		"X-Hop: gone\r\n" +
		"TE: trailers, deflate\r\n" +
		"Content-Length: 3\r\nContent-Length: 3\r\n" +
		"X-Forwarded-For: 203.0.113.7\r\n" +
		"Fulcrum-Client: c1\r\n\r\nabc")
	var h reqHead
	if v := parseRequest(in, &h); v != serveLean {
		t.Fatalf("verdict %d (%s)", v, h.why)
	}
	check := func(what string, s span, want string) {
		t.Helper()
		if got := string(s.of(in)); got != want {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	check("method", h.method, "POST")
	check("target", h.target, "/base/x%20y?q=1&r=%41")
	check("path", h.path, "/base/x%20y")
	check("query", h.query, "q=1&r=%41")
	check("host", h.host, "fd:8080")
	if !h.escaped || !h.close || !h.teTrailers || h.contentLength != 3 || h.chunked {
		t.Errorf("escaped=%v close=%v teTrailers=%v length=%d chunked=%v", h.escaped, h.close, h.teTrailers, h.contentLength, h.chunked)
	}
	if string(in[h.n:]) != "abc" {
		t.Errorf("head ends before %q, want the body", in[h.n:])
	}
	var hop []string
	for i := range h.fields {
		if h.hopByHop(in, &h.fields[i]) {
			hop = append(hop, string(h.fields[i].name.of(in)))
		}
	}
	if strings.Join(hop, ",") != "Connection,X-Hop,TE" {
		t.Errorf("hop-by-hop fields %q", hop)
	}
}

func TestParseResponse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		in      string
		want    verdict
		status  int
		length  int64
		chunked bool
		close   bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", serveLean, 200, 12, false, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", serveLean, 200, -1, true, false},
		{"close-delimited", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", serveLean, 200, -1, false, true},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", serveLean, 200, 1, false, true},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n", serveLean, 200, 1, false, false},
		{"no reason", "HTTP/1.1 204\r\n\r\n", serveLean, 204, -1, false, false},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\n\n", serveLean, 200, 0, false, false},
		{"interim", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", serveLean, 103, -1, false, false},
		{"incomplete", "HTTP/1.1 200 OK\r\nContent-Le", needMore, 0, 0, false, false},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", malformed, 0, 0, false, false},
		{"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", malformed, 0, 0, false, false},
		{"gzip coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", malformed, 0, 0, false, false},
		{"differing lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", malformed, 0, 0, false, false},
		{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\n\r\n", malformed, 0, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var h resHead
			got := parseResponse([]byte(tc.in), &h)
			if got != tc.want {
				t.Fatalf("verdict %d, want %d (why %q)", got, tc.want, h.why)
			}
			if got != serveLean {
				return
			}
			if h.status != tc.status || h.contentLength != tc.length || h.chunked != tc.chunked || h.close != tc.close {
				t.Errorf("status %d length %d chunked %v close %v", h.status, h.contentLength, h.chunked, h.close)
			}
		})
	}
}

func TestCopyChunked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in   string
		trailers   bool
		want       string // re-encoded; "" when malformed
		wantBytes  int64
		wantErrStr string
	}{
		{"two chunks", "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n", false, "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 11, ""},
		{"trailers kept", "3\r\nabc\r\n0\r\nX-Sum: 42\r\n\r\n", true, "3\r\nabc\r\n0\r\nX-Sum: 42\r\n\r\n", 3, ""},
		{"trailers dropped", "3\r\nabc\r\n0\r\nX-Sum: 42\r\n\r\n", false, "3\r\nabc\r\n0\r\n\r\n", 3, ""},
		{"upper-case hex", "A\r\n0123456789\r\n0\r\n\r\n", false, "a\r\n0123456789\r\n0\r\n\r\n", 10, ""},
		{"bad size", "x\r\nabc\r\n0\r\n\r\n", false, "", 0, "malformed"},
		{"missing CRLF after data", "3\r\nabcd\r\n0\r\n\r\n", false, "", 3, "malformed"},
		{"bare LF", "3\nabc\r\n0\r\n\r\n", false, "", 0, "malformed"},
		{"huge size", "fffffffffffffffff\r\n", false, "", 0, "malformed"},
		{"truncated", "5\r\nhel", false, "", 3, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			src := source{br: bufio.NewReaderSize(strings.NewReader(tc.in), 32)}
			n, err := copyChunked(w, &src, tc.trailers, true)
			_ = w.Flush()
			if tc.wantErrStr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrStr) {
					t.Fatalf("err %v, want %q", err, tc.wantErrStr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want || n != tc.wantBytes {
				t.Errorf("out %q (%d bytes), want %q (%d)", out.String(), n, tc.want, tc.wantBytes)
			}
		})
	}
}

// FuzzParseRequest checks the lean parser against net/http's: no panic;
// a head served lean is read by net/http the same way (and forwarded by
// ReverseProxy unchanged); a malformed one is refused by net/http too.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		"GET /prime/7?v=1 HTTP/1.1\r\nHost: fd\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: fd\r\nContent-Length: 5\r\n\r\nhello",
		"POST /x HTTP/1.1\r\nHost: fd\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
		"GET /a%2Fb HTTP/1.1\r\nHost: fd\r\nConnection: close, X-A\r\nX-A: 1\r\nTE: trailers\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: [::1]:80\r\nX-Forwarded-For: a\r\nX-Forwarded-For: b\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"GARBAGE GARBAGE GARBAGE\r\n\r\n",
		"GET / HTTP/1.1\r\nno colon\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"\x16\x03\x01",
		"POST / HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
		"GET host:80 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://x/a HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var h reqHead
		v := parseRequest(in, &h)
		switch v {
		case serveLean:
			checkLeanAgrees(t, in, &h)
		case malformed:
			full := in
			if !bytes.Contains(in, []byte("\n")) {
				full = append(append([]byte(nil), in...), "\r\n\r\n"...)
			}
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(full)))
			if err != nil || !serverAccepts(full, req) {
				return
			}
			// Where RFC 9112 is the reference, net/http takes what the
			// lean path refuses: only these two.
			switch {
			case h.why == whyAuthorityForm && req.Method != http.MethodConnect &&
				(req.URL.Opaque != "" || (req.URL.Host == "" && req.URL.Path == "")):
				// No path to forward: checkRequest refuses it too.
			case h.why == whyTE10 && req.ProtoMinor == 0 && rawFieldPresent(full, "Transfer-Encoding"):
			default:
				t.Fatalf("lean refused %q (%s), net/http accepts it", in, h.why)
			}
		}
	})
}

// rawFieldPresent reports whether the head in names a field, as read by
// textproto (net/http drops some fields from Request.Header).
func rawFieldPresent(in []byte, name string) bool {
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(in)))
	if _, err := tp.ReadLine(); err != nil {
		return false
	}
	mime, err := tp.ReadMIMEHeader()
	if err != nil {
		return false
	}
	_, ok := mime[name]
	return ok
}

// serverAccepts applies the checks net/http's server makes after
// ReadRequest (server.go, readRequest): a version it serves, a Host field
// for HTTP/1.1, a valid Host (httpguts.ValidHostHeader), no empty field
// name, names that are tokens (ReadRequest itself refuses bad values).
func serverAccepts(in []byte, req *http.Request) bool {
	if req.ProtoMajor != 1 {
		return false
	}
	// ReadRequest drops the Host field the server looks at: read it again.
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(in)))
	if _, err := tp.ReadLine(); err != nil {
		return false
	}
	mime, err := tp.ReadMIMEHeader()
	if err != nil {
		return false
	}
	hosts, ok := mime["Host"]
	if req.ProtoAtLeast(1, 1) && (!ok || len(hosts) == 0) && req.Method != "CONNECT" {
		return false
	}
	if len(hosts) == 1 {
		for i := 0; i < len(hosts[0]); i++ {
			if !strings.ContainsRune(netHTTPHostBytes, rune(hosts[0][i])) {
				return false
			}
		}
	}
	for k := range req.Header {
		if k == "" || strings.Trim(k, rfc9110TChar) != "" {
			return false // httpguts.ValidHeaderFieldName
		}
	}
	return true
}

// rfc9110TChar are the characters of a token (RFC 9110 §5.6.2).
const rfc9110TChar = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// netHTTPHostBytes are the bytes golang.org/x/net/http/httpguts accepts in
// a Host field.
const netHTTPHostBytes = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!$%&'()*+,-.:;=[]_~"

func checkLeanAgrees(t *testing.T, in []byte, h *reqHead) {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(in[:h.n])))
	if err != nil {
		t.Fatalf("lean serves %q, net/http refuses it: %v", in, err)
	}
	if !serverAccepts(in, req) {
		t.Fatalf("lean serves %q, net/http's server refuses it", in)
	}
	if req.Method != string(h.method.of(in)) || req.RequestURI != string(h.target.of(in)) || req.Host != string(h.host.of(in)) {
		t.Fatalf("%q: net/http reads %s %s host %q", in, req.Method, req.RequestURI, req.Host)
	}
	// What ReverseProxy would send: the same path and query.
	if got := req.URL.EscapedPath(); got != string(h.path.of(in)) {
		t.Fatalf("%q: net/http forwards path %q, lean %q", in, got, h.path.of(in))
	}
	if req.URL.RawQuery != string(h.query.of(in)) {
		t.Fatalf("%q: query %q vs %q", in, req.URL.RawQuery, h.query.of(in))
	}
	if _, err := url.ParseQuery(req.URL.RawQuery); err != nil {
		t.Fatalf("%q: lean forwards a query ReverseProxy re-encodes", in)
	}
	wantPath := string(h.path.of(in))
	if h.escaped {
		wantPath, _ = url.PathUnescape(wantPath)
	}
	if req.URL.Path != wantPath {
		t.Fatalf("%q: path %q vs %q", in, req.URL.Path, wantPath)
	}
	chunked := len(req.TransferEncoding) == 1 && req.TransferEncoding[0] == "chunked"
	if chunked != h.chunked || (!h.chunked && req.ContentLength != max(h.contentLength, 0)) {
		t.Fatalf("%q: net/http framing %v/%d, lean %v/%d", in, req.TransferEncoding, req.ContentLength, h.chunked, h.contentLength)
	}
	// A head with Content-Length and Transfer-Encoding closes the
	// connection after its answer (RFC 9112 §6.1), which net/http does not.
	conflict := rawFieldPresent(in, "Content-Length") && rawFieldPresent(in, "Transfer-Encoding")
	if conflict != framingConflict(in) {
		t.Fatalf("%q: framingConflict %v, textproto reads both fields: %v", in, !conflict, conflict)
	}
	if want := req.Close || conflict; h.close != want {
		t.Fatalf("%q: close %v, want %v (net/http %v)", in, h.close, want, req.Close)
	}
	// Field values, by canonical name, in order.
	got := map[string][]string{}
	for i := range h.fields {
		f := &h.fields[i]
		switch f.kind {
		case fOther, fFulcrumClient, fFulcrumCost, fXForwardedFor, fConnection, fTE:
			k := http.CanonicalHeaderKey(string(f.name.of(in)))
			got[k] = append(got[k], string(f.value.of(in)))
		}
	}
	for k, vv := range got {
		if k == "Cache-Control" || k == "Pragma" {
			continue // net/http adds Cache-Control for Pragma: no-cache
		}
		want := req.Header[k]
		if len(want) != len(vv) {
			t.Fatalf("%q: field %s %q vs net/http %q", in, k, vv, want)
		}
		for i := range vv {
			if strings.TrimRight(want[i], " \t") != vv[i] {
				t.Fatalf("%q: field %s %q vs net/http %q", in, k, vv, want)
			}
		}
	}
}

// FuzzParseResponse: no panic, no hang; a head read lean has the status
// and framing net/http reads.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n",
		"HTTP/1.1 204\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var h resHead
		if parseResponse(in, &h) != serveLean {
			return
		}
		res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(in[:h.n])), nil)
		if err != nil {
			t.Fatalf("lean reads %q, net/http refuses it: %v", in, err)
		}
		if res.StatusCode != h.status {
			t.Fatalf("%q: status %d vs %d", in, res.StatusCode, h.status)
		}
		chunked := len(res.TransferEncoding) == 1
		if h.status >= 200 && h.status != 204 && h.status != 304 &&
			(chunked != h.chunked || (!h.chunked && res.ContentLength != h.contentLength)) {
			t.Fatalf("%q: net/http framing %v/%d, lean %v/%d", in, res.TransferEncoding, res.ContentLength, h.chunked, h.contentLength)
		}
	})
}

// FuzzCopyChunked: a chunked body the lean path passes on decodes, as
// net/http decodes it, to the same content, and what it writes is valid
// chunked encoding of that content.
func FuzzCopyChunked(f *testing.F) {
	for _, s := range []string{
		"5\r\nhello\r\n0\r\n\r\n",
		"3;x=y\r\nabc\r\n0\r\nX-Sum: 1\r\n\r\n",
		"0\r\n\r\n",
		"0 ;\r\n\r\n", // blanks before an extension: net/http refuses them, so must the proxy
		"0 \r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		src := source{br: bufio.NewReaderSize(bytes.NewReader(in), 16)}
		n, err := copyChunked(w, &src, true, true)
		if err != nil {
			return
		}
		_ = w.Flush()
		want, werr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(in)))
		if werr != nil {
			t.Fatalf("lean passes %q, net/http's chunked reader refuses it: %v", in, werr)
		}
		got, gerr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(out.Bytes())))
		if gerr != nil || !bytes.Equal(got, want) || n != int64(len(want)) {
			t.Fatalf("%q: re-encoded %q decodes to %q (%v), want %q", in, out.Bytes(), got, gerr, want)
		}
	})
}

// TestHeadScans covers the scans the lean path makes of a head besides
// parseRequest: empty lines before it, its length, conflicting framing,
// and what a length with chunking does to the connection.
func TestHeadScans(t *testing.T) {
	t.Parallel()
	const get = "GET / HTTP/1.1\r\nHost: fd\r\n"
	for _, tc := range []struct {
		name     string
		in       string
		empty    int
		length   int
		conflict bool
	}{
		{"plain", get + "\r\n", 0, len(get) + 2, false},
		{"CRLF before", "\r\n\r\n" + get + "\r\n", 4, 4, false}, // the lean path discards emptyLines first
		{"lone CR before", "\r" + get, 0, 0, false},
		{"incomplete", get, 0, 0, false},
		{"bare LF", "GET / HTTP/1.1\nHost: fd\n\n", 0, 25, false},
		{"length and chunked", get + "content-length: 1\r\nTransfer-Encoding : chunked\r\n\r\n", 0, len(get) + 50, true},
		{"after the head", get + "\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 0, len(get) + 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := []byte(tc.in)
			if got := emptyLines(b); got != tc.empty {
				t.Errorf("emptyLines %d, want %d", got, tc.empty)
			}
			if got := headLength(b); got != tc.length {
				t.Errorf("headLength %d, want %d", got, tc.length)
			}
			if got := framingConflict(b); got != tc.conflict {
				t.Errorf("framingConflict %v, want %v", got, tc.conflict)
			}
		})
	}
	var h reqHead
	in := []byte("POST / HTTP/1.1\r\nHost: fd\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
	if v := parseRequest(in, &h); v != serveLean || !h.chunked || h.contentLength != -1 || !h.close {
		t.Errorf("length with chunked: verdict %d chunked %v length %d close %v, want chunked, closing", v, h.chunked, h.contentLength, h.close)
	}
}
