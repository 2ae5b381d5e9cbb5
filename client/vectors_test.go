package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/vectortest"
)

// TestVectorsClient runs every case of protocol/testdata/client.json (the
// binding protocol's scripts, shared with the Python client's tests; see
// protocol/testdata/README.md) against a real Transport and real local
// HTTP servers: each party answers its scripted responses in order, a
// refused party is a closed port, a reset closes the connection with
// SO_LINGER 0 after reading the request, close_without_response closes it
// (FIN) after reading the request, keep_alive leaves it open. Every call must end as the case
// says, and every party must have seen exactly the requests it lists.
func TestVectorsClient(t *testing.T) {
	t.Parallel()
	for _, tc := range vectortest.Load[clientCase](t, "client") {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

// clientCase is one case of client.json (see vectors.schema.json).
type clientCase struct {
	Name    string `json:"name"`
	Doc     string `json:"doc"`
	Options struct {
		ClientID        string   `json:"client_id"`
		FrontDoors      []string `json:"front_doors"`
		MaxHops         int      `json:"max_hops"`
		MaxBufferedBody int64    `json:"max_buffered_body"`
	} `json:"options"`
	Parties map[string]*vectorParty `json:"parties"`
	Calls   []vectorCall            `json:"calls"`
}

type vectorParty struct {
	Refused   bool              `json:"refused"`
	Responses []vectorResponse  `json:"responses"`
	Requests  []expectedRequest `json:"requests"`

	url string
	mu  sync.Mutex
	got []seenRequest // guarded by mu
}

type vectorResponse struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Reset   bool              `json:"reset"`
	// KeepAlive leaves the connection open for the next request (no
	// Connection: close).
	KeepAlive bool `json:"keep_alive"`
	// CloseWithoutResponse closes the connection (FIN, no reset) after
	// reading the request, answering nothing.
	CloseWithoutResponse bool `json:"close_without_response"`
}

type expectedRequest struct {
	Method  string            `json:"method"`
	Target  string            `json:"target"`
	Headers map[string]string `json:"headers"`
	Absent  []string          `json:"absent"`
	Body    *string           `json:"body"`
}

type seenRequest struct {
	method, target string
	header         http.Header
	body           string
}

type vectorCall struct {
	Doc        string            `json:"doc"`
	Method     string            `json:"method"`
	URL        string            `json:"url"`
	Headers    map[string]string `json:"headers"`
	Body       *string           `json:"body"`
	BodyStream bool              `json:"body_stream"`
	Expect     struct {
		Status  int               `json:"status"`
		Body    *string           `json:"body"`
		Headers map[string]string `json:"headers"`
		Error   string            `json:"error"`
	} `json:"expect"`
	// BindingAfter is absent (not checked), null (no binding) or the
	// binding.
	BindingAfter json.RawMessage `json:"binding_after"`
}

func (tc *clientCase) run(t *testing.T) {
	clientID := tc.Options.ClientID
	if clientID == "" {
		clientID = "vectors-client"
	}
	// Every party's URL is known before any serves: scripts name each
	// other's URLs.
	listeners := map[string]net.Listener{}
	for _, name := range slices.Sorted(maps.Keys(tc.Parties)) {
		p := tc.Parties[name]
		if p.Refused && (len(p.Responses) > 0 || len(p.Requests) > 0) {
			t.Fatalf("party %s: a refused party has no responses or requests", name)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p.url = "http://" + ln.Addr().String()
		if p.Refused {
			ln.Close() // a closed port: connections are refused
			continue
		}
		listeners[name] = ln
	}
	subst := tc.subst(clientID)
	for name, ln := range listeners {
		srv := &http.Server{Handler: tc.Parties[name].handler(t, name, subst)}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	var doors []string
	for _, d := range tc.Options.FrontDoors {
		p := tc.Parties[d]
		if p == nil {
			t.Fatalf("options.front_doors: no party %q", d)
		}
		doors = append(doors, p.url)
	}
	tr := client.NewTransport(client.Options{
		ClientID:        clientID,
		FrontDoors:      doors,
		MaxHops:         tc.Options.MaxHops,
		MaxBufferedBody: tc.Options.MaxBufferedBody,
		Logger:          slog.New(slog.DiscardHandler),
	})
	t.Cleanup(tr.CloseIdleConnections)
	for i, c := range tc.Calls {
		c.run(t, i, tr, subst)
	}
	for _, name := range slices.Sorted(maps.Keys(tc.Parties)) {
		tc.Parties[name].check(t, name, subst)
	}
}

// subst replaces {party} by the party's base URL and {client_id}.
func (tc *clientCase) subst(clientID string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, "{") {
			return s
		}
		s = strings.ReplaceAll(s, "{client_id}", clientID)
		for name, p := range tc.Parties {
			s = strings.ReplaceAll(s, "{"+name+"}", p.url)
		}
		return s
	}
}

// handler records each request whole and answers it with the party's next
// scripted response.
func (p *vectorParty) handler(t *testing.T, name string, subst func(string) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("party %s: read request body: %v", name, err)
		}
		p.mu.Lock()
		n := len(p.got)
		p.got = append(p.got, seenRequest{method: r.Method, target: r.RequestURI, header: r.Header.Clone(), body: string(body)})
		p.mu.Unlock()
		if n >= len(p.Responses) {
			w.Header().Set("Connection", "close")
			w.WriteHeader(599)
			return
		}
		resp := p.Responses[n]
		if resp.Reset || resp.CloseWithoutResponse {
			hangUp(t, w, resp.Reset)
			return
		}
		h := w.Header()
		for k, v := range resp.Headers {
			h.Set(k, subst(v))
		}
		if !resp.KeepAlive {
			h.Set("Connection", "close")
		}
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
		w.WriteHeader(resp.Status)
		_, _ = io.WriteString(w, resp.Body)
	})
}

// hangUp closes the request's connection answering nothing: with a TCP
// reset when rst, else with a FIN.
func hangUp(t *testing.T, w http.ResponseWriter, rst bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok && rst {
		_ = tcp.SetLinger(0)
	}
	conn.Close()
}

func (c *vectorCall) run(t *testing.T, i int, tr *client.Transport, subst func(string) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var body io.Reader
	if c.Body != nil {
		if c.BodyStream {
			body = struct{ io.Reader }{strings.NewReader(*c.Body)} // no GetBody, no length
		} else {
			body = strings.NewReader(*c.Body)
		}
	}
	url := subst(c.URL)
	req, err := http.NewRequestWithContext(ctx, c.Method, url, body)
	if err != nil {
		t.Fatalf("call %d: %v", i, err)
	}
	if c.BodyStream {
		req.ContentLength = -1
	}
	for k, v := range c.Headers {
		req.Header.Set(k, subst(v))
	}
	resp, err := tr.RoundTrip(req)
	want := c.Expect
	switch {
	case want.Error != "":
		if err == nil {
			resp.Body.Close()
			t.Fatalf("call %d (%s %s): status %d, want error %s", i, c.Method, c.URL, resp.StatusCode, want.Error)
		}
		tooMany := errors.Is(err, client.ErrTooManyHops)
		if (want.Error == "too_many_hops") != tooMany {
			t.Fatalf("call %d (%s %s): error %v, want %s", i, c.Method, c.URL, err, want.Error)
		}
	case err != nil:
		t.Fatalf("call %d (%s %s): %v, want status %d", i, c.Method, c.URL, err, want.Status)
	default:
		got, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil {
			t.Fatalf("call %d: read answer: %v", i, rerr)
		}
		if resp.StatusCode != want.Status {
			t.Fatalf("call %d (%s %s): status %d (%q), want %d", i, c.Method, c.URL, resp.StatusCode, got, want.Status)
		}
		if want.Body != nil && string(got) != *want.Body {
			t.Errorf("call %d: body %q, want %q", i, got, *want.Body)
		}
		for k, v := range want.Headers {
			if g := resp.Header.Values(k); len(g) != 1 || g[0] != subst(v) {
				t.Errorf("call %d: answer header %s = %q, want %q", i, k, g, subst(v))
			}
		}
	}
	if len(c.BindingAfter) == 0 {
		return
	}
	b, bound := tr.Binding(req.URL.Scheme + "://" + req.URL.Host)
	if string(c.BindingAfter) == "null" {
		if bound {
			t.Errorf("call %d: bound to %+v after the call, want no binding", i, b)
		}
		return
	}
	var wb struct{ Group, Replica, URL string }
	if err := json.Unmarshal(c.BindingAfter, &wb); err != nil {
		t.Fatalf("call %d: binding_after: %v", i, err)
	}
	wb.URL = subst(wb.URL)
	if !bound || b.Group != wb.Group || b.Replica != wb.Replica || b.URL != wb.URL {
		t.Errorf("call %d: binding after the call %+v (bound %v), want %+v", i, b, bound, wb)
	}
}

// check compares the requests the party saw with those it expects.
func (p *vectorParty) check(t *testing.T, name string, subst func(string) string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, got := range p.got {
		if i >= len(p.Requests) {
			t.Errorf("party %s: unexpected request %d: %s %s (headers %v)", name, i, got.method, got.target, got.header)
			continue
		}
		want := p.Requests[i]
		if got.method != want.Method || got.target != subst(want.Target) {
			t.Errorf("party %s: request %d is %s %s, want %s %s", name, i, got.method, got.target, want.Method, subst(want.Target))
		}
		for k, v := range want.Headers {
			if g := got.header.Values(k); len(g) != 1 || g[0] != subst(v) {
				t.Errorf("party %s: request %d: header %s = %q, want %q", name, i, k, g, subst(v))
			}
		}
		for _, k := range want.Absent {
			if g := got.header.Values(k); len(g) != 0 {
				t.Errorf("party %s: request %d: header %s = %q, want it absent", name, i, k, g)
			}
		}
		if want.Body != nil && got.body != *want.Body {
			t.Errorf("party %s: request %d: body %q, want %q", name, i, got.body, *want.Body)
		}
	}
	if len(p.got) < len(p.Requests) {
		t.Errorf("party %s: saw %d requests, want %d", name, len(p.got), len(p.Requests))
	}
}
