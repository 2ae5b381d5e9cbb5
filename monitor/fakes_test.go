package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fakeClock is a Clock whose time moves only when a test advances it.
// Every After call is announced on armed.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
	armed  chan time.Duration
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), armed: make(chan time.Duration, 1024)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	if d <= 0 {
		ch <- c.now
	} else {
		c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), ch: ch})
	}
	c.mu.Unlock()
	select {
	case c.armed <- d:
	default:
	}
	return ch
}

// Advance moves the clock on by d and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- c.now
	}
	c.timers = kept
}

// waitArmed waits for the next After call and returns its duration.
func (c *fakeClock) waitArmed(t *testing.T) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case d := <-c.armed:
		return d
	case <-ctx.Done():
		t.Fatal("timed out waiting for the monitor to arm a timer")
		return 0
	}
}

// fakeAdmin stands in for the balancer's admin API: it records
// registrations, reports and deregistrations and answers reports with a
// scripted advisory.
type fakeAdmin struct {
	srv       *httptest.Server
	frontDoor string

	mu             sync.Mutex
	registrations  []registrationCall
	reports        []reportCall
	deletes        []deleteCall
	tokens         map[string]bool
	issued         int
	advisory       protocol.Advisory
	regFailures    int
	reportInterval time.Duration
	// reported receives every report that arrives.
	reported chan reportCall
}

type registrationCall struct {
	Group string
	Auth  string
	Body  protocol.Registration
}

type reportCall struct {
	Token  string
	Report protocol.Report
}

type deleteCall struct {
	Path string
	Auth string
}

const testGroup = "prime"

func newFakeAdmin(t *testing.T) *fakeAdmin {
	t.Helper()
	a := &fakeAdmin{
		frontDoor:      "http://front.example:8000",
		tokens:         map[string]bool{},
		advisory:       protocol.Advisory{Advisory: protocol.Nominal},
		reportInterval: time.Hour, // tests drive reports with ReportNow
		reported:       make(chan reportCall, 1024),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/groups/{group}/replicas", a.register)
	mux.HandleFunc("POST /v1/report", a.report)
	mux.HandleFunc("DELETE /v1/groups/{group}/replicas/{id}", a.deregister)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAdmin) URL() string { return a.srv.URL }

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func (a *fakeAdmin) register(w http.ResponseWriter, r *http.Request) {
	var body protocol.Registration
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "bad_json", err.Error())
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.registrations = append(a.registrations, registrationCall{Group: r.PathValue("group"), Auth: r.Header.Get("Authorization"), Body: body})
	if a.regFailures > 0 {
		a.regFailures--
		writeError(w, http.StatusServiceUnavailable, "unavailable", "starting")
		return
	}
	// replace: same id, fresh token, old ones revoked
	clear(a.tokens)
	a.issued++
	token := fmt.Sprintf("tok-%d", a.issued)
	a.tokens[token] = true
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(protocol.Registered{
		ID:             "r1",
		Token:          token,
		FrontDoor:      a.frontDoor + "/",
		ReportURL:      a.srv.URL + "/v1/report",
		ReportInterval: protocol.Duration(a.reportInterval),
	})
}

func (a *fakeAdmin) report(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	rep, err := protocol.DecodeReport(data)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_report", err.Error())
		return
	}
	token, _ := cutBearer(r.Header.Get("Authorization"))
	a.mu.Lock()
	ok := a.tokens[token]
	adv := a.advisory
	if ok {
		a.reports = append(a.reports, reportCall{Token: token, Report: rep})
	}
	a.mu.Unlock()
	if !ok {
		writeError(w, http.StatusUnauthorized, "unknown_token", "unknown replica token")
		return
	}
	a.reported <- reportCall{Token: token, Report: rep}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(adv)
}

func (a *fakeAdmin) deregister(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.deletes = append(a.deletes, deleteCall{Path: r.URL.Path, Auth: r.Header.Get("Authorization")})
	a.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func cutBearer(h string) (string, bool) {
	const p = "Bearer "
	if len(h) < len(p) || h[:len(p)] != p {
		return "", false
	}
	return h[len(p):], true
}

func (a *fakeAdmin) setAdvisory(adv protocol.Advisory) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advisory = adv
}

func (a *fakeAdmin) revokeTokens() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.tokens)
}

func (a *fakeAdmin) snapshot() (regs []registrationCall, reps []reportCall, dels []deleteCall) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]registrationCall(nil), a.registrations...),
		append([]reportCall(nil), a.reports...),
		append([]deleteCall(nil), a.deletes...)
}

// replica is a real HTTP server wrapped in a monitor; it counts the calls
// it runs per Fulcrum-Client.
type replica struct {
	mon   *monitor.Monitor
	srv   *httptest.Server
	clock *fakeClock

	mu   sync.Mutex
	runs map[string]int
	// during, when set, runs inside every call.
	during func(r *http.Request)
}

func newReplica(t *testing.T, admin *fakeAdmin, edit func(*monitor.Options)) *replica {
	t.Helper()
	rp := &replica{clock: newFakeClock(), runs: map[string]int{}}
	rp.srv = httptest.NewUnstartedServer(nil)
	opts := monitor.Options{
		Group:     testGroup,
		Address:   "http://" + rp.srv.Listener.Addr().String(),
		JoinToken: "join-secret",
		Clock:     rp.clock,
		Logger:    discardLogger(),
	}
	if admin != nil { // nil: edit names the admin API
		opts.Admin = admin.URL()
	}
	if edit != nil {
		edit(&opts)
	}
	mon, err := monitor.New(opts)
	if err != nil {
		t.Fatalf("monitor.New: %v", err)
	}
	rp.mon = mon
	rp.srv.Config.Handler = mon.Handler(http.HandlerFunc(rp.serve))
	rp.srv.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = mon.Close(ctx)
		rp.srv.Close()
	})
	return rp
}

func (rp *replica) serve(w http.ResponseWriter, r *http.Request) {
	rp.mu.Lock()
	rp.runs[r.Header.Get(protocol.HeaderClient)]++
	during := rp.during
	rp.mu.Unlock()
	if during != nil {
		during(r)
	}
	_, _ = io.WriteString(w, "ok")
}

func (rp *replica) setDuring(f func(r *http.Request)) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.during = f
}

func (rp *replica) ran(client string) int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.runs[client]
}

// start starts the monitor and waits for its registration.
func (rp *replica) start(t *testing.T) protocol.Registered {
	t.Helper()
	if err := rp.mon.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := rp.mon.WaitRegistered(ctx)
	if err != nil {
		t.Fatalf("WaitRegistered: %v", err)
	}
	return reg
}

// reportNow closes a window of length d (on the fake clock) and pushes it.
func (rp *replica) reportNow(t *testing.T, d time.Duration) protocol.Advisory {
	t.Helper()
	rp.clock.Advance(d)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adv, err := rp.mon.ReportNow(ctx)
	if err != nil {
		t.Fatalf("ReportNow: %v", err)
	}
	return adv
}

var noRedirects = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

// call makes one call to the replica as client (bound when bound is true)
// and returns the status code and the response headers.
func (rp *replica) call(t *testing.T, client string, bound bool, pathAndQuery string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rp.srv.URL+pathAndQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	if client != "" {
		req.Header.Set(protocol.HeaderClient, client)
	}
	if bound {
		req.Header.Set(protocol.HeaderBinding, testGroup+"/r1")
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("call as %q: %v", client, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// calls makes n bound calls as client and fails unless every one ran.
func (rp *replica) calls(t *testing.T, client string, bound bool, n int) {
	t.Helper()
	for range n {
		if code, _ := rp.call(t, client, bound, "/prime/7"); code != http.StatusOK {
			t.Fatalf("call as %q: status %d, want 200", client, code)
		}
	}
}
