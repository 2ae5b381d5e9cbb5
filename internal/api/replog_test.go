package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/boltlog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// replicatedOptions are balancer options whose replicated groups keep
// their logs in one bbolt file, as serve's on a single node.
func replicatedOptions(t *testing.T) balancer.Options {
	t.Helper()
	db, err := boltlog.Open(filepath.Join(t.TempDir(), boltlog.FileName), boltlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return balancer.Options{Instance: "solo", ReplicatedLog: func(group string, lim replog.Limits, ttl time.Duration) (replog.Log, error) {
		return db.Group(group, boltlog.GroupOptions{Limits: lim, SessionTTL: ttl})
	}}
}

// logRoutes are the three log routes of group name, each with a valid
// body.
func logRoutes(name string) []struct {
	method, path, body string
	ok                 int
} {
	return []struct {
		method, path, body string
		ok                 int
	}{
		{"GET", "/v1/groups/" + name + "/log?from=0", "", http.StatusOK},
		{"POST", "/v1/groups/" + name + "/log/applied", `{"applied":"3","checkpoints":true}`, http.StatusNoContent},
		{"POST", "/v1/groups/" + name + "/log/replies", `{"replies":[{"position":"1","status":200,"body":"aGk="}]}`, http.StatusNoContent},
		// A callee nobody listens on: a 502 reply, answered 200.
		{"POST", "/v1/groups/" + name + "/outcalls", `{"key":"` + name + `/1/0","method":"POST","url":"http://127.0.0.1:1/x"}`, http.StatusOK},
	}
}

// bodyOf is a route's body for call: nil when empty.
func bodyOf(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// The log routes take the token of a replica of the group only: without
// an admin token set, with one (which they refuse), and never another
// group's replica's.
func TestLogRoutesAccess(t *testing.T) {
	t.Parallel()
	for _, adminTok := range []string{"", adminToken} {
		t.Run("admin token "+map[bool]string{true: "set", false: "unset"}[adminTok != ""], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, api.Options{AdminToken: adminTok}, replicatedOptions(t))
			e.mustGroup("counter", map[string]any{"binding": "replicated"})
			e.mustGroup("other", map[string]any{"binding": "replicated"})
			e.mustGroup("plain", map[string]any{"binding": "per-request"})
			rep := e.mustRegister("counter", "http://127.0.0.1:9101")
			otherRep := e.mustRegister("other", "http://127.0.0.1:9102")
			plainRep := e.mustRegister("plain", "http://127.0.0.1:9103")
			for _, rt := range logRoutes("counter") {
				a := e.call(rt.method, rt.path, "", bodyOf(rt.body))
				if got := wantError(t, a, http.StatusUnauthorized, "unauthorized", ""); !strings.Contains(got.Message, "take only the token of a replica of that group") {
					t.Errorf("%s %s without a token: %q, want it to name the token it takes", rt.method, rt.path, got.Message)
				}
				a = e.call(rt.method, rt.path, otherRep.Token, bodyOf(rt.body))
				if got := wantError(t, a, http.StatusUnauthorized, "unauthorized", ""); !strings.HasPrefix(got.Message, "the token is not valid here") {
					t.Errorf("%s %s with another group's replica token: %q", rt.method, rt.path, got.Message)
				}
				if adminTok != "" {
					a = e.call(rt.method, rt.path, adminTok, bodyOf(rt.body))
					if got := wantError(t, a, http.StatusUnauthorized, "unauthorized", ""); !strings.HasPrefix(got.Message, "the admin token is not accepted here") {
						t.Errorf("%s %s with the admin token: %q", rt.method, rt.path, got.Message)
					}
				}
				if rt.method == "GET" {
					// A stream that lasts: only its head is read.
					status, ct := e.streamHead(rt.path, rep.Token)
					if status != http.StatusOK || ct != "application/x-ndjson" {
						t.Errorf("log stream with the replica's token: %d, Content-Type %q; want 200 application/x-ndjson", status, ct)
					}
				} else {
					want(t, e.call(rt.method, rt.path, rep.Token, bodyOf(rt.body)), rt.ok)
				}
			}
			for _, rt := range logRoutes("nope") {
				wantError(t, e.call(rt.method, rt.path, rep.Token, bodyOf(rt.body)), http.StatusNotFound, "unknown_group", "")
			}
			for _, rt := range logRoutes("plain") {
				got := wantError(t, e.call(rt.method, rt.path, plainRep.Token, bodyOf(rt.body)), http.StatusConflict, "not_replicated", "")
				if !strings.Contains(got.Message, "group plain has binding per-request") {
					t.Errorf("%s %s of a per-request group: %q", rt.method, rt.path, got.Message)
				}
			}
		})
	}
}

// streamHead opens a stream at path with token and returns its status and
// Content-Type, then leaves.
func (e *env) streamHead(path, token string) (int, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Content-Type")
}

// Bad input on the log routes is a 400 naming the field.
func TestLogRoutesBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, replicatedOptions(t))
	e.mustGroup("counter", map[string]any{"binding": "replicated", "replicated": map[string]any{"max_payload": "1KiB"}})
	tok := e.mustRegister("counter", "http://127.0.0.1:9101").Token
	big := `{"replies":[{"position":"1","status":200,"body":"` + strings.Repeat("QUFB", 80<<10/4) + `"}]}` // 80 KiB > 6 × 1 KiB + 64 KiB
	tests := []struct {
		name, method, path, body string
		code, field, allowed     string
	}{
		{"from not a number", "GET", "/v1/groups/counter/log?from=abc", "", "invalid_value", "from", "decimal integer"},
		{"from negative", "GET", "/v1/groups/counter/log?from=-1", "", "invalid_value", "from", "decimal integer"},
		{"from too large", "GET", "/v1/groups/counter/log?from=18446744073709551616", "", "invalid_value", "from", "18446744073709551615"},
		{"from twice", "GET", "/v1/groups/counter/log?from=1&from=2", "", "invalid_value", "from", "given once"},
		{"from empty", "GET", "/v1/groups/counter/log?from=", "", "invalid_value", "from", "decimal integer"},
		{"applied unknown member", "POST", "/v1/groups/counter/log/applied", `{"applied":"3","checkpoints":true,"extra":1}`, "invalid_json", "extra", "not a known field"},
		{"applied as a number", "POST", "/v1/groups/counter/log/applied", `{"applied":3,"checkpoints":true}`, "invalid_json", "applied", `must be a number in a JSON string, such as "42"`},
		{"reply position as a number", "POST", "/v1/groups/counter/log/replies", `{"replies":[{"position":1}]}`, "invalid_json", "replies[0].position", "JSON string"},
		{"applied twice", "POST", "/v1/groups/counter/log/applied", `{"applied":"3","applied":"4","checkpoints":true}`, "invalid_json", "applied", "duplicate key"},
		{"applied empty", "POST", "/v1/groups/counter/log/applied", ``, "invalid_json", "body", "JSON object"},
		{"reply position 0", "POST", "/v1/groups/counter/log/replies", `{"replies":[{"position":"1"},{"position":"0"}]}`, "invalid_value", "replies[1].position", "at least 1"},
		{"reply unknown member", "POST", "/v1/groups/counter/log/replies", `{"replies":[{"position":"1","colour":"red"}]}`, "invalid_json", "replies[0].colour", "not a known field"},
		{"replies too large", "POST", "/v1/groups/counter/log/replies", big, "invalid_json", "body", "at most 71680 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := wantError(t, e.call(tc.method, tc.path, tok, bodyOf(tc.body)), http.StatusBadRequest, tc.code, tc.field)
			if !strings.Contains(got.Allowed, tc.allowed) {
				t.Errorf("allowed %q does not mention %q (message %q)", got.Allowed, tc.allowed, got.Message)
			}
		})
	}
}

// The log stream is NDJSON flushed line by line: each line a LogEvent of
// the hub's stream.
func TestLogStreamLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{}, replicatedOptions(t))
	e.mustGroup("counter", map[string]any{"binding": "replicated"})
	tok := e.mustRegister("counter", "http://127.0.0.1:9101").Token
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/groups/counter/log?from=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev protocol.LogEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Type == "" {
			t.Fatalf("line %q is not a LogEvent: %v", sc.Text(), err)
		}
		if ev.Type == protocol.LogEventHello {
			return // the stream's first line; it goes on until the client leaves
		}
		t.Fatalf("first line %q, want a hello", sc.Text())
	}
	t.Fatalf("the stream ended without a line: %v", sc.Err())
}

// A replica's agent, end to end over real HTTP: it streams the log while
// the group orders a request through its hub, sees the entry, posts its
// reply, which the hub hands to the caller, and reports what it applied.
func TestLogRoutesEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, replicatedOptions(t))
	e.mustGroup("counter", map[string]any{"binding": "replicated"})
	rep := e.mustRegister("counter", "http://127.0.0.1:9101")
	peer := e.mustRegister("counter", "http://127.0.0.1:9102")
	hub, ok := e.b.Hub("counter")
	if !ok {
		t.Fatal("no hub for the replicated group")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/groups/counter/log?from=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+rep.Token)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	want(t, answer{status: resp.StatusCode}, http.StatusOK)
	lines := make(chan protocol.LogEvent)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev protocol.LogEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("line %q: %v", sc.Text(), err)
				return
			}
			select {
			case lines <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	next := func(skip ...string) protocol.LogEvent {
		t.Helper()
		for {
			select {
			case ev, ok := <-lines:
				if !ok {
					t.Fatal("the log stream ended")
				}
				if slices.Contains(skip, ev.Type) {
					continue
				}
				return ev
			case <-ctx.Done():
				t.Fatal("no line from the log stream in time")
			}
		}
	}
	if ev := next(); ev.Type != protocol.LogEventHello || len(ev.Peers) != 1 || ev.Peers[0].ID != peer.ID || ev.Peers[0].Address != "http://127.0.0.1:9102" {
		t.Fatalf("first line %+v, want a hello naming the other replica %s", ev, peer.ID)
	}

	type ordered struct {
		r   replhub.Reply
		err error
	}
	done := make(chan ordered, 1)
	stamp := time.Date(2026, 11, 27, 12, 0, 0, 1, time.UTC)
	go func() {
		r, err := hub.Order(ctx, replhub.Call{Session: "client-1", Seq: 9, Request: &protocol.OrderedRequest{
			Kind: protocol.KindHTTP, Method: "POST", Target: "/increment", Body: []byte("+1"), Time: stamp, Seed: 42,
		}})
		done <- ordered{r, err}
	}()
	ev := next(protocol.LogEventHeartbeat)
	if ev.Type != protocol.LogEventEntry || ev.Position != 1 || ev.Session != "client-1" || ev.Seq != 9 || ev.Origin != "solo" || ev.ReplyTo != "" ||
		ev.Request == nil || ev.Request.Target != "/increment" || string(ev.Request.Body) != "+1" || ev.Request.Seed != 42 || !ev.Request.Time.Equal(stamp) {
		t.Fatalf("entry %+v (request %+v), want position 1 of client-1/9 appended by solo with the request", ev, ev.Request)
	}

	reply := protocol.ReplyBatch{Replies: []protocol.ReplicaReply{{Position: 1, Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"value":1}`)}}}
	want(t, e.call("POST", "/v1/groups/counter/log/replies", rep.Token, reply), http.StatusNoContent)
	select {
	case o := <-done:
		if o.err != nil || o.r.Position != 1 || o.r.Replica != rep.ID || o.r.Status != 200 || string(o.r.Body) != `{"value":1}` || o.r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("Order = %+v, %v; want the replica's reply to position 1", o.r, o.err)
		}
	case <-ctx.Done():
		t.Fatal("Order got no reply")
	}

	want(t, e.call("POST", "/v1/groups/counter/log/applied", rep.Token, protocol.AppliedReport{Applied: 1, Checkpoints: true}), http.StatusNoContent)
	if got := hub.AppliedBy(rep.ID); got != 1 {
		t.Errorf("AppliedBy(%s) = %d after its report, want 1", rep.ID, got)
	}
}

// Another instance's reply request reaches this instance's streams of the
// group: the agent streaming here sees it, with where to post the reply.
func TestLogAsk(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, replicatedOptions(t))
	e.mustGroup("counter", map[string]any{"binding": "replicated"})
	e.mustGroup("plain", nil)
	rep := e.mustRegister("counter", "http://127.0.0.1:9101")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/groups/counter/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+rep.Token)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"type":"hello"`) {
		t.Fatalf("first line %q (%v), want a hello", sc.Text(), sc.Err())
	}
	// The stream is subscribed once its hello is out.
	ask := map[string]any{"position": "7", "reply_to": "http://10.0.0.2:7070"}
	want(t, e.call("POST", "/v1/groups/counter/log/ask", adminToken, ask), http.StatusOK)
	for sc.Scan() {
		var ev protocol.LogEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == protocol.LogEventHeartbeat {
			continue
		}
		if ev.Type != protocol.LogEventReplyRequest || ev.Position != 7 || ev.ReplyTo != "http://10.0.0.2:7070" {
			t.Fatalf("line %q, want a reply_request of 7 to http://10.0.0.2:7070", sc.Text())
		}
		break
	}

	wantError(t, e.call("POST", "/v1/groups/counter/log/ask", rep.Token, ask), http.StatusUnauthorized, "unauthorized", "")
	wantError(t, e.call("POST", "/v1/groups/counter/log/ask", adminToken, map[string]any{"position": "0", "reply_to": "http://a:1"}), http.StatusBadRequest, "invalid_value", "position")
	wantError(t, e.call("POST", "/v1/groups/counter/log/ask", adminToken, map[string]any{"position": "3", "reply_to": "ftp://a"}), http.StatusBadRequest, "invalid_value", "reply_to")
	wantError(t, e.call("POST", "/v1/groups/plain/log/ask", adminToken, ask), http.StatusConflict, "not_replicated", "")
	wantError(t, e.call("POST", "/v1/groups/nope/log/ask", adminToken, ask), http.StatusNotFound, "unknown_group", "")
}

// Replicated callers: the replicas' copies of one outgoing call reach the
// callee once, with the key as Idempotency-Key, and every copy gets the
// callee's reply.
func TestOutcalls(t *testing.T) {
	t.Parallel()
	type seen struct{ key, body, hop string }
	calls := make(chan seen, 8)
	callee := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls <- seen{r.Header.Get("Idempotency-Key"), string(body), r.Header.Get("X-Trace") + "|" + r.Header.Get("Keep-Alive")}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"total":5}`))
	}))
	defer callee.Close()
	e := newEnv(t, api.Options{}, replicatedOptions(t))
	e.mustGroup("relay", map[string]any{"binding": "replicated"})
	reps := []registered{e.mustRegister("relay", "http://127.0.0.1:9101"), e.mustRegister("relay", "http://127.0.0.1:9102"), e.mustRegister("relay", "http://127.0.0.1:9103")}
	oc := protocol.Outcall{Key: "relay/4/0", Method: "POST", URL: callee.URL + "/add", Header: http.Header{"X-Trace": {"t1"}, "Keep-Alive": {"300"}}, Body: []byte("+5")}
	answers := make(chan answer, len(reps))
	for _, rep := range reps {
		go func() { answers <- e.call("POST", "/v1/groups/relay/outcalls", rep.Token, oc) }()
	}
	for range reps {
		a := <-answers
		want(t, a, http.StatusOK)
		var r protocol.OutcallReply
		a.decode(t, &r)
		if r.Status != http.StatusCreated || string(r.Body) != `{"total":5}` || r.Header.Get("Content-Type") != "application/json" || r.Error != "" {
			t.Errorf("a copy's reply %+v, want the callee's 201", r)
		}
	}
	if c := <-calls; c.key != "relay/4/0" || c.body != "+5" || c.hop != "t1|" {
		t.Errorf("the callee saw %+v, want key relay/4/0, body +5, X-Trace kept and Keep-Alive dropped", c)
	}
	select {
	case c := <-calls:
		t.Errorf("the callee was called twice: %+v", c)
	default:
	}

	tok := reps[0].Token
	for _, tc := range []struct {
		name, field string
		oc          protocol.Outcall
	}{
		{"key of another group", "key", protocol.Outcall{Key: "other/4/0", Method: "POST", URL: callee.URL}},
		{"position 0", "key", protocol.Outcall{Key: "relay/0/0", Method: "POST", URL: callee.URL}},
		{"no method", "method", protocol.Outcall{Key: "relay/4/1", URL: callee.URL}},
		{"bad method", "method", protocol.Outcall{Key: "relay/4/1", Method: "PO ST", URL: callee.URL}},
		{"relative url", "url", protocol.Outcall{Key: "relay/4/1", Method: "POST", URL: "/add"}},
		{"ftp url", "url", protocol.Outcall{Key: "relay/4/1", Method: "POST", URL: "ftp://x/add"}},
		{"giop to an http url", "url", protocol.Outcall{Key: "relay/4/1", Method: "GIOP", URL: callee.URL, Body: giopRequest(t)}},
		{"giop body not giop", "body", protocol.Outcall{Key: "relay/4/1", Method: "GIOP", URL: "corbaloc:iiop:1.2@127.0.0.1:1/Counter", Body: []byte("+5")}},
	} {
		wantError(t, e.call("POST", "/v1/groups/relay/outcalls", tok, tc.oc), http.StatusBadRequest, "invalid_value", tc.field)
	}
	select {
	case c := <-calls:
		t.Errorf("a refused outcall reached the callee: %+v", c)
	default:
	}
}

// giopRequest is a whole GIOP 1.2 Request message.
func giopRequest(t *testing.T) []byte {
	t.Helper()
	b, err := giop.EncodeMessage(&giop.Request{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 1,
		ResponseFlags: giop.FlagsTwoway, Target: giop.KeyTarget([]byte("Counter")), Operation: "increment"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
