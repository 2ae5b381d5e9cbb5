package replagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// counterServer is fulcrum backend counter's handler on a real socket.
func counterServer(t testing.TB) (*backend.Counter, *httptest.Server) {
	t.Helper()
	c := &backend.Counter{}
	srv := httptest.NewServer(backend.NewCounterHandler(c, backend.CounterOptions{
		Now:  func() time.Time { t.Error("the counter read its clock: a stamp is missing"); return time.Time{} },
		Rand: func() uint64 { t.Error("the counter drew a random number: a stamp is missing"); return 0 },
	}))
	t.Cleanup(srv.Close)
	return c, srv
}

func newHTTP(t testing.TB, target string, opts replagent.HTTPOptions) *replagent.HTTPDeliverer {
	t.Helper()
	d, err := replagent.NewHTTP(target, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func increment(pos uint64) *protocol.OrderedRequest {
	return &protocol.OrderedRequest{Kind: protocol.KindHTTP, Method: http.MethodPost, Target: "/increment?by=2",
		Header: http.Header{"Content-Type": {"application/json"}}, Time: t0.Add(time.Duration(pos) * time.Nanosecond), Seed: 1000 + pos}
}

func TestHTTPDelivererDeliversToTheCounterWithItsStamps(t *testing.T) {
	t.Parallel()
	c, srv := counterServer(t)
	d := newHTTP(t, srv.URL, replagent.HTTPOptions{})
	ctx := context.Background()
	for pos := uint64(1); pos <= 3; pos++ {
		r, err := d.Deliver(ctx, pos, increment(pos))
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Value int64 }
		if err := json.Unmarshal(r.Body, &body); err != nil || r.Status != 200 || r.Position != pos || body.Value != int64(2*pos) {
			t.Fatalf("reply to %d: %+v (%s), want 200 {value: %d} at position %d", pos, r, r.Body, 2*pos, pos)
		}
	}
	st := c.State()
	wantID := rand.New(rand.NewPCG(1003, 0)).Uint64()
	if st.Value != 6 || st.Increments != 3 || !st.LastChanged.Equal(t0.Add(3)) || st.LastID != wantID {
		t.Fatalf("counter state %+v, want value 6, 3 increments, last_changed %s and last_id %d from the last stamps", st, t0.Add(3), wantID)
	}
}

func TestHTTPDelivererSendsTheRequestAsOrdered(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = r
		body = make([]byte, r.ContentLength)
		_, _ = io.ReadFull(r.Body, body)
		w.Header().Set("X-Reply", "yes")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("made"))
	}))
	defer srv.Close()
	d := newHTTP(t, srv.URL+"/base/", replagent.HTTPOptions{})
	req := &protocol.OrderedRequest{Kind: protocol.KindHTTP, Method: http.MethodPut, Target: "/a%2Fb/c?x=1&y=2",
		Header: http.Header{"X-Custom": {"v1", "v2"}, "Connection": {"close"}}, Body: []byte("payload"),
		Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600)), Seed: 18446744073709551615}
	r, err := d.Deliver(context.Background(), 42, req)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	checks := map[string][2]string{
		"method":           {got.Method, http.MethodPut},
		"escaped path":     {got.URL.EscapedPath(), "/base/a%2Fb/c"},
		"query":            {got.URL.RawQuery, "x=1&y=2"},
		"X-Custom":         {strings.Join(got.Header.Values("X-Custom"), ","), "v1,v2"},
		"Fulcrum-Time":     {got.Header.Get(protocol.HeaderTime), "2026-01-02T02:04:05.000000006Z"},
		"Fulcrum-Seed":     {got.Header.Get(protocol.HeaderSeed), "18446744073709551615"},
		"Fulcrum-Position": {got.Header.Get(protocol.HeaderPosition), "42"},
		"body":             {string(body), "payload"},
		"reply status":     {http.StatusText(r.Status), http.StatusText(http.StatusCreated)},
		"reply header":     {r.Header.Get("X-Reply"), "yes"},
		"reply body":       {string(r.Body), "made"},
	}
	for what, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s: got %q, want %q", what, c[0], c[1])
		}
	}
	if got.Close || got.Header.Get("Connection") != "" {
		t.Error("a hop-by-hop header reached the server")
	}
}

func TestHTTPDelivererStateRoundTrip(t *testing.T) {
	t.Parallel()
	c1, srv1 := counterServer(t)
	c2, srv2 := counterServer(t)
	d1, d2 := newHTTP(t, srv1.URL, replagent.HTTPOptions{}), newHTTP(t, srv2.URL, replagent.HTTPOptions{})
	ctx := context.Background()
	for pos := uint64(1); pos <= 4; pos++ {
		if _, err := d1.Deliver(ctx, pos, increment(pos)); err != nil {
			t.Fatal(err)
		}
	}
	if !d1.CanCheckpoint(ctx) {
		t.Fatal("the counter serves /fulcrum/state, yet CanCheckpoint is false")
	}
	state, err := d1.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.SetState(ctx, state); err != nil {
		t.Fatal(err)
	}
	if c1.State() != c2.State() || c2.State().Value != 8 {
		t.Fatalf("after the transfer: %+v and %+v, want equal states at value 8", c1.State(), c2.State())
	}
	if err := d2.SetState(ctx, []byte(`{"value":1}`)); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("a state the counter refuses: %v, want an error naming its 400", err)
	}
}

func TestHTTPDelivererNoState(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
		d := newHTTP(t, srv.URL, replagent.HTTPOptions{})
		if _, err := d.State(context.Background()); !errors.Is(err, replagent.ErrNoState) {
			t.Errorf("state answered %d: err %v, want ErrNoState", status, err)
		}
		if d.CanCheckpoint(context.Background()) {
			t.Errorf("state answered %d: CanCheckpoint true", status)
		}
		srv.Close()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	defer srv.Close()
	d := newHTTP(t, srv.URL, replagent.HTTPOptions{})
	if _, err := d.State(context.Background()); err == nil || errors.Is(err, replagent.ErrNoState) || !strings.Contains(err.Error(), "500") {
		t.Errorf("state answered 500: err %v, want an error naming 500 that is not ErrNoState", err)
	}
}

func TestHTTPDelivererRefusals(t *testing.T) {
	t.Parallel()
	_, srv := counterServer(t)
	d := newHTTP(t, srv.URL, replagent.HTTPOptions{MaxReply: 4})
	ctx := context.Background()
	if _, err := d.Deliver(ctx, 5, &protocol.OrderedRequest{Kind: protocol.KindGIOP}); err == nil || !strings.Contains(err.Error(), "position 5") || !strings.Contains(err.Error(), `"giop"`) {
		t.Errorf("a GIOP entry: %v, want an error naming position 5 and the kind", err)
	}
	if _, err := d.Deliver(ctx, 6, &protocol.OrderedRequest{Kind: protocol.KindHTTP, Method: "GET", Target: "value"}); err == nil || !strings.Contains(err.Error(), "position 6") {
		t.Errorf("a target without /: %v, want an error naming position 6", err)
	}
	r, err := d.Deliver(ctx, 7, increment(7))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusBadGateway || !strings.Contains(string(r.Body), replagent.CodeReplyTooLarge) || !strings.Contains(string(r.Body), "position 7") {
		t.Errorf("a reply above MaxReply: %d %s, want 502 %s naming position 7", r.Status, r.Body, replagent.CodeReplyTooLarge)
	}
	srv.Close()
	if _, err := d.Deliver(ctx, 8, increment(8)); err == nil || !strings.Contains(err.Error(), "position 8") {
		t.Errorf("a server gone: %v, want an error naming position 8", err)
	}
	for _, bad := range []string{"", "ftp://x", "http://", "http://h/?q=1", "/relative"} {
		if _, err := replagent.NewHTTP(bad, replagent.HTTPOptions{}); err == nil || !strings.Contains(err.Error(), "target") {
			t.Errorf("NewHTTP(%q): %v, want an error naming the target", bad, err)
		}
	}
}
