package balancer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// quiet is the logger of every balancer, monitor and API in these tests.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newFakeClock is the clock of a test's balancer, moved by hand.
func newFakeClock() *clocktest.Manual {
	return clocktest.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
}

// handMoved is a clock whose time moves only when the test moves it while
// its tickers tick on the system clock: the loops step on their own, and
// every step sees the time the test set.
type handMoved struct{ *clocktest.Manual }

func (handMoved) NewTicker(d time.Duration) clock.Ticker { return clock.Real().NewTicker(d) }

// envOptions configure an env.
type envOptions struct {
	// dir is the data directory; a fresh t.TempDir() when empty.
	dir string
	// clock, when not nil, is the balancer's clock.
	clock *clocktest.Manual
	// admin serves the real admin API over the balancer on a loopback
	// socket (and sets Options.AdminURL to it).
	admin bool
	// config groups are applied with ApplyConfig before Start (when not
	// nil: an empty list is a config file that declares no group).
	config []protocol.Group
	// noStart leaves the balancer unstarted.
	noStart bool
	// joinToken is the global join token.
	joinToken string
	// wrapStore, when not nil, wraps the store the balancer writes to
	// (the env still closes the store it opened).
	wrapStore func(store.Store) store.Store
	// ticking, when not nil, is the balancer's clock, tickers included:
	// the loops step only when the test moves it (clock is ignored).
	ticking *clocktest.Manual
	// net, when not nil, is the in-memory network the balancer listens
	// and dials on (tests inside a testing/synctest bubble).
	net *memnet.Network
	// dial, when not nil, is the balancer's Options.Dial (net wins).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// engine is the HTTP front doors' engine (the default when empty).
	engine string
	// logger, when not nil, is the balancer's logger (quiet otherwise).
	logger *slog.Logger
	// shared sets Options.SharedConfig (a store shared by instances).
	shared bool
	// follow sets Options.Follow.
	follow bool
	// store, when not nil, is the store (another env's, not closed by
	// this one) instead of a bbolt store in dir.
	store store.Store
	// peers and onFrontDoors are Options.Peers and Options.OnFrontDoors.
	peers        func() []balancer.Peer
	onFrontDoors func()
	// replicatedLog and instance are Options.ReplicatedLog and
	// Options.Instance.
	replicatedLog func(group string, limits replog.Limits, sessionTTL time.Duration) (replog.Log, error)
	instance      string
	// peerAdminURLs is Options.PeerAdminURLs.
	peerAdminURLs func() []string
}

// env is a balancer over a real bbolt store, optionally behind the real
// admin API.
type env struct {
	t     *testing.T
	dir   string
	st    store.Store
	b     *balancer.Balancer
	clock *clocktest.Manual
	// adminURL is the admin API's base URL ("" without opts.admin).
	adminURL string
	srv      *httptest.Server
	// ownStore tells that the env opened st (and closes it).
	ownStore bool

	closeOnce sync.Once
}

// newEnv opens the store in opts.dir, builds the balancer, applies the
// config groups and starts it. The env is closed at the end of the test.
func newEnv(t *testing.T, opts envOptions) *env {
	t.Helper()
	e := &env{t: t, dir: opts.dir, clock: opts.clock}
	if e.dir == "" {
		e.dir = t.TempDir()
	}
	var st store.Store = opts.store
	if st == nil {
		bst, err := boltstore.Open(e.dir)
		if err != nil {
			t.Fatal(err)
		}
		st = bst
		e.ownStore = true
	}
	e.st = st
	var bst store.Store = st
	if opts.wrapStore != nil {
		bst = opts.wrapStore(st)
	}
	bopts := balancer.Options{
		Store:      bst,
		Logger:     quiet,
		Rand:       strategy.NewRand(1),
		JoinToken:  opts.joinToken,
		AdminURL:   "http://admin.invalid",
		HTTPEngine: opts.engine,

		SharedConfig: opts.shared,
		Follow:       opts.follow,
		Peers:        opts.peers,
		OnFrontDoors: opts.onFrontDoors,

		ReplicatedLog: opts.replicatedLog,
		Instance:      opts.instance,
		PeerAdminURLs: opts.peerAdminURLs,
	}
	if opts.logger != nil {
		bopts.Logger = opts.logger
	}
	if opts.clock != nil {
		bopts.Clock = handMoved{opts.clock}
	}
	if opts.ticking != nil {
		bopts.Clock = opts.ticking
	}
	if opts.dial != nil {
		bopts.Dial = opts.dial
	}
	if opts.net != nil {
		bopts.Listen, bopts.Dial = opts.net.Listen, opts.net.Dial
	}
	if opts.admin {
		e.srv = httptest.NewUnstartedServer(nil)
		if opts.net != nil {
			onNetwork(t, e.srv, opts.net)
		}
		e.adminURL = "http://" + e.srv.Listener.Addr().String()
		bopts.AdminURL = e.adminURL
	}
	b, err := balancer.New(bopts)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	e.b = b
	t.Cleanup(e.close)
	if opts.config != nil {
		if err := b.ApplyConfig(opts.config); err != nil {
			t.Fatalf("ApplyConfig: %v", err)
		}
	}
	if e.srv != nil {
		e.srv.Config.Handler = api.New(b, api.Options{Logger: quiet})
		e.srv.Start()
	}
	if !opts.noStart {
		if err := b.Start(); err != nil {
			t.Fatalf("Start: %v", err)
		}
	}
	return e
}

// close shuts the balancer down and closes the admin API and the store.
// Safe to call more than once.
func (e *env) close() {
	e.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.b.Shutdown(ctx); err != nil {
			e.t.Errorf("Shutdown: %v", err)
		}
		if e.srv != nil {
			e.srv.Close()
		}
		if !e.ownStore {
			return
		}
		if err := e.st.Close(); err != nil {
			e.t.Errorf("store close: %v", err)
		}
	})
}

// reopen closes e and opens a new env on the same data directory.
func (e *env) reopen(opts envOptions) *env {
	e.t.Helper()
	e.close()
	opts.dir = e.dir
	return newEnv(e.t, opts)
}

// ms is a protocol.Duration of n milliseconds.
func ms(n int) protocol.Duration { return protocol.Duration(time.Duration(n) * time.Millisecond) }

// mustPutGroup creates or replaces a group and returns its status.
func (e *env) mustPutGroup(gs protocol.Group) protocol.GroupStatus {
	e.t.Helper()
	if gs.FrontDoor == "" {
		gs.FrontDoor = "127.0.0.1:0"
	}
	st, _, err := e.b.PutGroup(gs)
	if err != nil {
		e.t.Fatalf("PutGroup(%s): %v", gs.Name, err)
	}
	return st
}

// mustGroup returns a group's status.
func (e *env) mustGroup(name string) protocol.GroupStatus {
	e.t.Helper()
	st, err := e.b.Group(name)
	if err != nil {
		e.t.Fatalf("Group(%s): %v", name, err)
	}
	return st
}

// mustRegister registers address (push mode) in group.
func (e *env) mustRegister(group, address string) protocol.Registered {
	e.t.Helper()
	return e.mustRegisterWith(group, protocol.Registration{Address: address})
}

func (e *env) mustRegisterWith(group string, reg protocol.Registration) protocol.Registered {
	e.t.Helper()
	out, created, err := e.b.Register(group, reg)
	if err != nil {
		e.t.Fatalf("Register(%s, %s): %v", group, reg.Address, err)
	}
	if !created && !reg.Replace {
		e.t.Fatalf("Register(%s, %s): created = false without replace", group, reg.Address)
	}
	return out
}

// mustReport pushes a report with token.
func (e *env) mustReport(token string, r protocol.Report) protocol.Advisory {
	e.t.Helper()
	adv, err := e.b.Report(token, r)
	if err != nil {
		e.t.Fatalf("Report(%+v): %v", r, err)
	}
	return adv
}

// subscribe subscribes to a group's events until the end of the test.
func (e *env) subscribe(name string) <-chan balancer.Event {
	e.t.Helper()
	ch, cancel, err := e.b.Subscribe(name)
	if err != nil {
		e.t.Fatalf("Subscribe(%s): %v", name, err)
	}
	e.t.Cleanup(cancel)
	return ch
}

// replicaOf returns the status of replica id, failing the test if the
// group has none.
func replicaOf(t *testing.T, st protocol.GroupStatus, id string) protocol.ReplicaStatus {
	t.Helper()
	for _, r := range st.Replicas {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("group %s has no replica %s (replicas %v)", st.Name, id, replicaIDs(st))
	return protocol.ReplicaStatus{}
}

func replicaIDs(st protocol.GroupStatus) []string {
	ids := make([]string, 0, len(st.Replicas))
	for _, r := range st.Replicas {
		ids = append(ids, r.ID)
	}
	return ids
}

// eventually calls cond until it returns nil, failing the test with cond's
// last error if that has not happened within d.
func eventually(t *testing.T, d time.Duration, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not within %s: %v", d, err)
		case <-tick.C:
		}
	}
}

// waitEvent reads events until match returns nil for one, and returns it.
// It fails the test when d passes or the channel closes first, with
// match's last complaint.
func waitEvent(t *testing.T, ch <-chan balancer.Event, d time.Duration, match func(balancer.Event) error) balancer.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	last := errors.New("no event")
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("event channel closed; last mismatch: %v", last)
			}
			if last = match(ev); last == nil {
				return ev
			}
		case <-ctx.Done():
			t.Fatalf("no matching event within %s; last mismatch: %v", d, last)
		}
	}
}

// recv returns the next value from ch, failing the test if none comes
// within d.
func recv[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("waited %s for %s", d, what)
		panic("unreachable")
	}
}

// waitClosed fails the test unless ch is closed within d (events still
// queued are read and dropped).
func waitClosed(t *testing.T, ch <-chan balancer.Event, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-ctx.Done():
			t.Fatalf("event channel not closed within %s", d)
		}
	}
}

// stepReplica is one replica of a step event, as the event stream shows
// it.
type stepReplica struct {
	ID       string   `json:"id"`
	State    string   `json:"state"`
	Load     *float64 `json:"load"`
	Advisory string   `json:"advisory"`
	Epoch    uint64   `json:"epoch"`
}

// memberEntry is one replica of a membership event.
type memberEntry struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	State   string `json:"state"`
}

// replicasOf decodes the replicas of a step or membership event.
func replicasOf[T any](ev balancer.Event) ([]T, error) {
	raw, err := json.Marshal(ev.Data)
	if err != nil {
		return nil, err
	}
	var d struct {
		Replicas []T `json:"replicas"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("decode %s event %s: %w", ev.Type, raw, err)
	}
	return d.Replicas, nil
}

// stepAfter matches a step event at or after at (the balancer's clock)
// and hands its replicas, by id, to check.
func stepAfter(at time.Time, check func(map[string]stepReplica) error) func(balancer.Event) error {
	return func(ev balancer.Event) error {
		if ev.Type != "step" {
			return fmt.Errorf("%s event, want step", ev.Type)
		}
		if ev.Time.Before(at) {
			return fmt.Errorf("step at %s, before %s", ev.Time.Format(time.StampMilli), at.Format(time.StampMilli))
		}
		reps, err := replicasOf[stepReplica](ev)
		if err != nil {
			return err
		}
		byID := map[string]stepReplica{}
		for _, r := range reps {
			byID[r.ID] = r
		}
		return check(byID)
	}
}

// membership matches a membership event and hands its replicas, by id,
// to check.
func membership(check func(map[string]memberEntry) error) func(balancer.Event) error {
	return func(ev balancer.Event) error {
		if ev.Type != "membership" {
			return fmt.Errorf("%s event, want membership", ev.Type)
		}
		reps, err := replicasOf[memberEntry](ev)
		if err != nil {
			return err
		}
		byID := map[string]memberEntry{}
		for _, r := range reps {
			byID[r.ID] = r
		}
		return check(byID)
	}
}

// httpClient returns a client of its own (its idle connections closed at
// the end of the test) that does not follow redirects.
func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// answer is one HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   string
}

// get GETs url and reads the whole answer.
func get(t *testing.T, c *http.Client, url string) answer {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// newReplica starts a replica HTTP server, closed at the end of the test.
func newReplica(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// named answers every call with name.
func named(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, name)
	})
}

// unstartedReplica is a replica server whose address is known before its
// handler (a monitor needs the address, the handler needs the monitor).
type unstartedReplica struct{ srv *httptest.Server }

func newUnstartedReplica(t *testing.T) *unstartedReplica {
	srv := httptest.NewUnstartedServer(nil)
	t.Cleanup(srv.Close)
	return &unstartedReplica{srv: srv}
}

// newMemUnstartedReplica is an unstartedReplica on n (bubble_test.go).
func newMemUnstartedReplica(t *testing.T, n *memnet.Network) *unstartedReplica {
	r := newUnstartedReplica(t)
	onNetwork(t, r.srv, n)
	return r
}

// URL is the replica's base URL.
func (r *unstartedReplica) URL() string { return "http://" + r.srv.Listener.Addr().String() }

func (r *unstartedReplica) start(h http.Handler) {
	r.srv.Config.Handler = h
	r.srv.Start()
}

// adminClient is an HTTP client of the test's own for monitors talking to
// the admin API.
func adminClient(t *testing.T) *http.Client {
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// closeMonitor closes a monitor (deregistering it), bounded.
type closer interface {
	Close(ctx context.Context) error
}

func closeMonitor(t *testing.T, m closer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Errorf("monitor close: %v", err)
	}
}
