package httpdoor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
)

// jsonLine is an access log line as JSON, every key required.
type jsonLine struct {
	Time       *string  `json:"time"`
	Client     *string  `json:"client"`
	Method     *string  `json:"method"`
	Path       *string  `json:"path"`
	Proto      *string  `json:"proto"`
	Status     *int     `json:"status"`
	Replica    *string  `json:"replica"`
	DurationMS *float64 `json:"duration_ms"`
	Bytes      *int64   `json:"bytes"`
}

// decodeJSONLine decodes one line strictly: one object, known keys only,
// every key present.
func decodeJSONLine(line []byte) (jsonLine, error) {
	var l jsonLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, err
	}
	if dec.More() {
		return l, fmt.Errorf("more than one value in %q", line)
	}
	if l.Time == nil || l.Client == nil || l.Method == nil || l.Path == nil || l.Proto == nil || l.Status == nil || l.Replica == nil || l.DurationMS == nil || l.Bytes == nil {
		return l, fmt.Errorf("a key is missing from %s", line)
	}
	return l, nil
}

// testAccessLogJSON: with AccessLogJSON, both engines log a call as one
// JSON object with the logfmt line's values.
func testAccessLogJSON(t *testing.T, engine string) {
	t.Parallel()
	r1 := startReplica(t, "r1", "", nil)
	var log syncBuffer
	at := time.Date(2026, 1, 2, 15, 4, 5, 6e6, time.UTC)
	_, fd := perRequestDoor(t, Options{Engine: engine, AccessLog: &log, AccessLogJSON: true, Now: func() time.Time { return at }}, r1)
	conn, br := rawConn(t, fd.addr)
	_, _ = io.WriteString(conn, "GET /a?b=%22c%22&q=\"x\" HTTP/1.1\r\nHost: fd\r\n\r\n")
	_, body := readAnswer(t, br, "GET")
	fd.stop(t)
	out := log.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("access log, want one line:\n%s", out)
	}
	l, err := decodeJSONLine([]byte(out))
	if err != nil {
		t.Fatalf("access log line: %v", err)
	}
	if *l.Time != "2026-01-02T15:04:05.006Z" || !strings.HasPrefix(*l.Client, "127.0.0.1:") || *l.Method != "GET" ||
		*l.Path != `/a?b=%22c%22&q="x"` || *l.Proto != "HTTP/1.1" || *l.Status != 200 || *l.Replica != "r1" ||
		*l.DurationMS != 0 || *l.Bytes != int64(len(body)) {
		t.Errorf("access log line %s: want time 2026-01-02T15:04:05.006Z, client 127.0.0.1:*, GET, the path as sent, HTTP/1.1, 200, r1, 0 ms, %d bytes", out, len(body))
	}
}

// FuzzAccessLogJSON: whatever a request carries, its JSON line decodes
// to the values encoding/json would give for the same strings.
func FuzzAccessLogJSON(f *testing.F) {
	f.Add("GET", "/prime/7?x=%22q%22", "127.0.0.1:50312", "r1")
	f.Add("POST", "/\"quoted\"\\back\tslash\n", "[::1]:1", "")
	f.Add("X", "\x00\x1f\x7f\xff\xfe<>&\u2028é€😀", "h", "-")
	f.Add("G", "\xed\xa0\x80 surrogate \xc3", "c", "r")
	f.Fuzz(func(t *testing.T, method, target, client, replica string) {
		e := &lean.Entry{Start: time.Unix(1e9, 123e6), Client: client, Method: method, Target: target, Proto: "HTTP/1.1", Bytes: 42}
		line := appendJSONEntry(nil, e, 307, replica, 1500*time.Microsecond)
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("not one line: %q", line)
		}
		l, err := decodeJSONLine(line)
		if err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		for key, got := range map[string]string{"method": *l.Method, "path": *l.Path, "client": *l.Client, "replica": *l.Replica} {
			in := map[string]string{"method": method, "path": target, "client": client, "replica": replica}[key]
			if want := viaEncodingJSON(t, in); got != want {
				t.Errorf("%s %q decodes as %q, encoding/json gives %q (line %q)", key, in, got, want, line)
			}
		}
		if *l.Status != 307 || *l.DurationMS != 1.5 || *l.Bytes != 42 || *l.Time != "2001-09-09T01:46:40.123Z" || *l.Proto != "HTTP/1.1" {
			t.Errorf("line %q: the numbers or the time are wrong", line)
		}
	})
}

// viaEncodingJSON is s after a round trip through encoding/json.
func viaEncodingJSON(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAccessLogAllocations: writing a line allocates nothing once the
// buffer has grown, in either format.
func TestAccessLogAllocations(t *testing.T) {
	e := &lean.Entry{Start: time.Unix(1e9, 0), Client: "127.0.0.1:50312", Method: "GET", Target: "/prime/7?x=\"é\"", Proto: "HTTP/1.1", Status: 200, Replica: "r1", Bytes: 12}
	end := e.Start.Add(time.Millisecond)
	for _, asJSON := range []bool{false, true} {
		a := &accessLog{w: io.Discard, json: asJSON}
		a.WriteEntry(e, end)
		if n := testing.AllocsPerRun(100, func() { a.WriteEntry(e, end) }); n != 0 {
			t.Errorf("json=%v: %.1f allocations per line, want 0", asJSON, n)
		}
	}
}
