package replagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// outcallEnv is a deduplicating callee (a counter with NewDedup, counting
// the requests that reach it by Idempotency-Key) and the balancer's
// outcalls route of group g on a real socket: the real replhub.Outcalls,
// forwarding over HTTP with the key as Idempotency-Key, each replica known
// by its token.
type outcallEnv struct {
	callee  *httptest.Server
	counter *backend.Counter
	api     *httptest.Server

	mu   sync.Mutex
	keys map[string]int // Idempotency-Key → requests that reached the callee
}

func newOutcallEnv(t *testing.T) *outcallEnv {
	t.Helper()
	e := &outcallEnv{counter: &backend.Counter{}, keys: map[string]int{}}
	dedup := backend.NewDedup(backend.NewCounterHandler(e.counter, backend.CounterOptions{}), 0)
	e.callee = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.keys[r.Header.Get(backend.HeaderIdempotencyKey)]++
		e.mu.Unlock()
		dedup.ServeHTTP(w, r)
	}))
	t.Cleanup(e.callee.Close)
	hc := &http.Client{}
	t.Cleanup(hc.CloseIdleConnections)
	oc := replhub.NewOutcalls(func(ctx context.Context, key string, c protocol.Outcall) (protocol.OutcallReply, error) {
		req, err := http.NewRequestWithContext(ctx, c.Method, c.URL, strings.NewReader(string(c.Body)))
		if err != nil {
			return protocol.OutcallReply{}, err
		}
		req.Header = c.Header.Clone()
		req.Header.Set(protocol.HeaderIdempotencyKey, key)
		resp, err := hc.Do(req)
		if err != nil {
			return protocol.OutcallReply{}, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return protocol.OutcallReply{Status: resp.StatusCode, Header: resp.Header, Body: body}, err
	}, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/groups/g/outcalls", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer token-") {
			http.Error(w, "no replica token", http.StatusUnauthorized)
			return
		}
		var c protocol.Outcall
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if _, _, err := protocol.ParseOutcallKey(c.Key, "g"); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reply, err := oc.Call(r.Context(), c)
		if err != nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply)
	})
	e.api = httptest.NewServer(mux)
	t.Cleanup(e.api.Close)
	return e
}

func (e *outcallEnv) seen() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, n := range e.keys {
		out[k] = n
	}
	return out
}

// deadURL is an admin URL nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

// startRelay starts a relay (fulcrum backend relay) calling the env's
// callee through its agent, as --proxy does, and the agent in front of it.
func (e *outcallEnv) startRelay(t *testing.T, id string, admins []string) (*backend.Counter, *replica) {
	t.Helper()
	var agentURL atomic.Pointer[url.URL]
	tr := &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return agentURL.Load(), nil }}
	t.Cleanup(tr.CloseIdleConnections)
	c := &backend.Counter{}
	h, err := backend.NewRelayHandler(c, backend.RelayOptions{Next: e.callee.URL, Client: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	token := func() (string, bool) { return "token-" + id, true }
	r := startReplica(t, id, replicaOpts{server: srv, admins: admins, outcaller: &replagent.AdminClient{Group: "g", Token: token}})
	u, _ := url.Parse(r.listen.URL)
	agentURL.Store(u)
	return c, r
}

// TestAgentKeysItsServersOutgoingCalls runs two replicated relays, each
// behind its agent and sending its calls to the next tier through it (the
// relay's --proxy): each replica's copy of an entry's call is posted as
// g/<position>/0 to the first admin URL that answers (the first is down),
// the callee gets each call once, and both relays get the same replies
// and end in the same state. Calls through the agent outside an entry get
// 409, CONNECT 405, and neither reaches the callee.
func TestAgentKeysItsServersOutgoingCalls(t *testing.T) {
	t.Parallel()
	e := newOutcallEnv(t)
	admins := []string{deadURL(t), e.api.URL}
	c1, r1 := e.startRelay(t, "r1", admins)
	c2, r2 := e.startRelay(t, "r2", admins)
	for _, r := range []*replica{r1, r2} {
		wait(t, r.src.opened, "the stream")
		r.send(t, hello(0))
	}
	// Entries 3, 5 and 8 each increment by 2: the callee answers 2, 4, 6
	// and the relays' own counters go 2, 6, 12. Both agents deliver each
	// entry at the same time.
	for i, pos := range []uint64{3, 5, 8} {
		var wg sync.WaitGroup
		for _, r := range []*replica{r1, r2} {
			wg.Go(func() { r.send(t, counterEntry(pos, "")) })
		}
		wg.Wait()
		want := int64([]int{2, 6, 12}[i])
		r1.expectReply(t, src, pos, want)
		r2.expectReply(t, src, pos, want)
	}
	if s1, s2 := c1.State(), c2.State(); s1 != s2 || s1.Value != 12 || s1.Increments != 3 {
		t.Fatalf("the relays' states: %+v and %+v, want equal at 12 after 3 increments", s1, s2)
	}
	want := map[string]int{"g/3/0": 1, "g/5/0": 1, "g/8/0": 1}
	if got := e.seen(); len(got) != len(want) || got["g/3/0"] != 1 || got["g/5/0"] != 1 || got["g/8/0"] != 1 {
		t.Fatalf("the callee saw %v, want each of %v once", got, want)
	}
	if v := e.counter.State().Value; v != 6 {
		t.Fatalf("the callee's counter is at %d, want 6 (3 calls by 2)", v)
	}

	// Between entries: refused, and the callee sees nothing.
	proxy, _ := url.Parse(r1.listen.URL)
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post(e.callee.URL+"/increment", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), `"no_entry"`) || !strings.Contains(string(body), "no entry is being delivered") {
		t.Fatalf("a call through the agent between entries: %d %s, want 409 no_entry", resp.StatusCode, body)
	}
	if _, err := hc.Get("https://" + strings.TrimPrefix(e.callee.URL, "http://") + "/value"); err == nil || !strings.Contains(err.Error(), "Method Not Allowed") {
		t.Fatalf("an https:// call through the agent: %v, want CONNECT refused with 405", err)
	}
	// The path of a GIOP servant's calls (Agent.Outcall): the same refusal.
	if _, err := r1.agent.Outcall(context.Background(), protocol.Outcall{Method: "POST", URL: e.callee.URL + "/increment"}); !errors.Is(err, replagent.ErrNoEntry) {
		t.Fatalf("Agent.Outcall between entries: %v, want ErrNoEntry", err)
	}
	if got := e.seen(); len(got) != 3 {
		t.Fatalf("refused calls reached the callee: %v", got)
	}
}

// TestAgentNumbersAnEntrysCallsInOrder: a server that makes two calls
// while applying one entry gets them keyed g/<position>/0 and /1, each
// reaching the callee once; a call whose body is above the bound gets 413
// and reaches nobody.
func TestAgentNumbersAnEntrysCallsInOrder(t *testing.T) {
	t.Parallel()
	e := newOutcallEnv(t)
	var agentURL atomic.Pointer[url.URL]
	tr := &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return agentURL.Load(), nil }}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var got []string
		for _, body := range []string{"", "", strings.Repeat("x", 2048)} {
			resp, err := hc.Post(e.callee.URL+"/increment", "text/plain", strings.NewReader(body))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got = append(got, resp.Status+" "+strings.TrimSpace(string(b)))
		}
		_ = json.NewEncoder(w).Encode(map[string][]string{"calls": got})
	}))
	t.Cleanup(server.Close)
	st, err := replagent.OpenStore(t.TempDir(), "g")
	if err != nil {
		t.Fatal(err)
	}
	admin, src := newMemAdmin(), newChanSource()
	token := func() (string, bool) { return "token-r1", true }
	a, err := replagent.New(replagent.Options{Group: "g", Self: "r1", Deliverer: newHTTP(t, server.URL, replagent.HTTPOptions{}), Source: src,
		Admin: admin, Admins: []string{e.api.URL}, Store: st, MaxOutcall: 1024,
		Outcaller: &replagent.AdminClient{Group: "g", Token: token}})
	if err != nil {
		t.Fatal(err)
	}
	proxy, _ := replagent.NewProxy(server.URL)
	listen := httptest.NewServer(a.Handler(proxy))
	u, _ := url.Parse(listen.URL)
	agentURL.Store(u)
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := wait(t, runErr, "Run to return"); err != nil {
			t.Errorf("Run: %v", err)
		}
		listen.Close()
		st.Close()
	})
	wait(t, src.opened, "the stream")
	src.events <- hello(0)
	src.events <- protocol.LogEvent{Type: protocol.LogEventEntry, Position: 7, Request: &protocol.OrderedRequest{
		Kind: protocol.KindHTTP, Method: http.MethodPost, Target: "/twice", Time: t0, Seed: 1}}
	s := wait(t, admin.replies, "the reply to 7")
	var body struct{ Calls []string }
	if err := json.Unmarshal(s.reply.Body, &body); err != nil || len(body.Calls) != 3 ||
		body.Calls[0] != `200 OK {"value":1}` || body.Calls[1] != `200 OK {"value":2}` || !strings.HasPrefix(body.Calls[2], "413 ") {
		t.Fatalf("the server's calls answered %s, want values 1 and 2, then 413", s.reply.Body)
	}
	if got := e.seen(); len(got) != 2 || got["g/7/0"] != 1 || got["g/7/1"] != 1 {
		t.Fatalf("the callee saw %v, want g/7/0 and g/7/1 once each", got)
	}
}
