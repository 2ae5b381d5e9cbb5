package balancer_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// logBuffer collects a balancer's log lines. Safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// declared is a config group on a free port.
func declared(name, strat string, statics ...string) protocol.Group {
	g := protocol.Group{Name: name, FrontDoor: "127.0.0.1:0", Strategy: strat, ReportInterval: ms(20)}
	for _, a := range statics {
		g.Replicas = append(g.Replicas, protocol.StaticReplica{Address: a})
	}
	return g
}

// TestReloadRules: a reload leaves a declared group equal to the running
// one untouched (same group, strategy, probe loop and front door), reverts
// a declared group changed through the API and takes over a declared name
// held by an API group (both with the warning of the start), deletes the
// config groups no longer declared and leaves other API groups alone.
func TestReloadRules(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	a := declared("a", strategy.PrequalName) // a Prober: it runs a probe loop
	b := declared("b", strategy.LeastLoadedName)
	c := declared("c", strategy.LeastLoadedName)
	e := newEnv(t, envOptions{config: []protocol.Group{a, b, c}, logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.mustPutGroup(protocol.Group{Name: "x", Strategy: strategy.RoundRobinName})
	e.mustPutGroup(protocol.Group{Name: "d", Strategy: strategy.RoundRobinName})
	rr := strategy.RoundRobinName
	if _, err := e.b.PatchGroup("b", protocol.GroupPatch{Strategy: &rr}); err != nil {
		t.Fatal(err)
	}
	idA, idX := e.b.IdentityOf("a"), e.b.IdentityOf("x")
	if idA.Probes == nil || idA.FrontDoor == nil {
		t.Fatalf("group a runs no probe loop or front door: %+v", idA)
	}
	listenA := e.mustGroup("a").Listening

	d := declared("d", strategy.LeastLoadedName)
	f := declared("f", strategy.RoundRobinName)
	res, err := e.b.Reload([]protocol.Group{a, b, d, f})
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	want := balancer.ReloadResult{Added: []string{"f"}, Changed: []string{"b", "d"}, Removed: []string{"c"}}
	if !slices.Equal(res.Added, want.Added) || !slices.Equal(res.Changed, want.Changed) || !slices.Equal(res.Removed, want.Removed) {
		t.Errorf("Reload = %+v, want %+v", res, want)
	}
	if got := e.b.IdentityOf("a"); got != idA {
		t.Errorf("the unchanged group a was touched: %+v, was %+v", got, idA)
	}
	if got := e.mustGroup("a").Listening; got != listenA {
		t.Errorf("group a listens on %s, was %s", got, listenA)
	}
	if got := e.b.IdentityOf("x"); got != idX {
		t.Errorf("the API group x was touched: %+v, was %+v", got, idX)
	}
	if st := e.mustGroup("x"); st.Source != protocol.SourceAPI {
		t.Errorf("API group x: source %q", st.Source)
	}
	for _, name := range []string{"b", "d"} {
		if st := e.mustGroup(name); st.Strategy != strategy.LeastLoadedName || st.Source != protocol.SourceConfig {
			t.Errorf("group %s: strategy %s source %s; want the file's least-loaded, source config", name, st.Strategy, st.Source)
		}
	}
	if _, err := e.b.Group("c"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("group c, no longer declared: %v, want ErrUnknownGroup", err)
	}
	if st := e.mustGroup("f"); st.Listening == "" || st.Source != protocol.SourceConfig {
		t.Errorf("added group f: listening %q source %q", st.Listening, st.Source)
	}
	out := logs.String()
	for _, w := range []string{
		`level=WARN msg="group is declared in the config file; reverting run-time changes" group=b`,
		`level=WARN msg="group is declared in the config file; reverting run-time changes" group=d`,
		`level=WARN msg="group is no longer declared in the config file; deleting it" group=c`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("log lacks %s:\n%s", w, out)
		}
	}

	// The same file again changes nothing.
	ids := map[string]balancer.Identity{}
	for _, n := range []string{"a", "b", "d", "f", "x"} {
		ids[n] = e.b.IdentityOf(n)
	}
	res, err = e.b.Reload([]protocol.Group{a, b, d, f})
	if err != nil || len(res.Added)+len(res.Changed)+len(res.Removed) != 0 {
		t.Errorf("reloading the same file: %+v, %v; want no change", res, err)
	}
	for n, id := range ids {
		if got := e.b.IdentityOf(n); got != id {
			t.Errorf("reloading the same file touched group %s", n)
		}
	}

	// A group changed in the file (not through the API) is applied
	// without the warning.
	f.Strategy = strategy.RandomName
	res, err = e.b.Reload([]protocol.Group{a, b, d, f})
	if err != nil || !slices.Equal(res.Changed, []string{"f"}) || e.mustGroup("f").Strategy != strategy.RandomName {
		t.Errorf("changing f in the file: %+v, %v", res, err)
	}
	out = logs.String()
	if !strings.Contains(out, `msg="group changed in the config file" group=f`) || strings.Contains(out, "reverting run-time changes\" group=f") {
		t.Errorf("a change in the file is logged as a revert, or not at all:\n%s", out)
	}
}

// brief is what a refused reload must leave as it was.
func brief(sts []protocol.GroupStatus) string {
	var b strings.Builder
	for _, st := range sts {
		fmt.Fprintf(&b, "%s %s %s %s %s %v\n", st.Name, st.Source, st.Strategy, st.Binding, st.Listening, st.Timeouts)
	}
	return b.String()
}

// TestReloadRefusedChangesNothing: a reload with any problem changes
// nothing, returns every problem, and lets go of the listeners it bound
// ahead.
func TestReloadRefusedChangesNothing(t *testing.T) {
	t.Parallel()
	a := declared("a", strategy.LeastLoadedName)
	b := declared("b", strategy.PrequalName)
	e := newEnv(t, envOptions{config: []protocol.Group{a, b}})
	before := brief(e.b.Groups())
	ids := map[string]balancer.Identity{"a": e.b.IdentityOf("a"), "b": e.b.IdentityOf("b")}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free := freeLoopbackAddr(t)

	a2 := a
	a2.Strategy = strategy.RoundRobinName // would change
	c := declared("c", strategy.RoundRobinName)
	c.FrontDoor = free // would bind
	d := declared("d", strategy.RoundRobinName)
	d.FrontDoor = taken.Addr().String() // cannot bind
	bad := declared("e", strategy.RoundRobinName)
	bad.Binding = "sometimes" // invalid
	// b is no longer declared: it would go.
	_, err = e.b.Reload([]protocol.Group{a2, c, d, bad})
	var re *balancer.ReloadError
	if !errors.As(err, &re) {
		t.Fatalf("Reload = %v, want a *balancer.ReloadError", err)
	}
	if len(re.Problems) != 2 || !strings.Contains(re.Problems[0].Error(), "group e: ") || !strings.Contains(re.Problems[0].Error(), "binding") ||
		!strings.Contains(re.Problems[1].Error(), "group d: front_door "+taken.Addr().String()) || !errors.Is(re.Problems[1], balancer.ErrFrontDoor) {
		t.Errorf("problems %v; want group e's binding and group d's front door", re.Problems)
	}
	if after := brief(e.b.Groups()); after != before {
		t.Errorf("a refused reload changed the groups:\n%s\nwere\n%s", after, before)
	}
	for n, id := range ids {
		if got := e.b.IdentityOf(n); got != id {
			t.Errorf("a refused reload touched group %s", n)
		}
	}
	ln, err := net.Listen("tcp", free)
	if err != nil {
		t.Fatalf("the listener bound ahead for group c is still open: %v", err)
	}
	ln.Close()
}

// freeLoopbackAddr is a loopback address nothing listens on now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestReloadNewTimeoutsKeepListener: new timeouts replace the front door
// on the same listener; a call in flight finishes on the old one, and new
// connections are served by the new one.
func TestReloadNewTimeoutsKeepListener(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	rep := newReplica(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "done")
	}))
	a := declared("a", strategy.RoundRobinName, rep.URL)
	a.Binding = protocol.PerRequest
	a.Timeouts.Request = protocol.Duration(20 * time.Second)
	e := newEnv(t, envOptions{config: []protocol.Group{a}})
	eventually(t, 10*time.Second, func() error {
		if len(e.b.EligibleIDs("a")) == 0 {
			return errors.New("no eligible replica")
		}
		return nil
	})
	addr := e.mustGroup("a").Listening
	before := e.b.IdentityOf("a")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow call did not reach the replica")
	}

	a.Timeouts.Request = protocol.Duration(25 * time.Second)
	res, err := e.b.Reload([]protocol.Group{a})
	if err != nil || !slices.Equal(res.Changed, []string{"a"}) {
		t.Fatalf("Reload = %+v, %v; want a changed", res, err)
	}
	st := e.mustGroup("a")
	if st.Listening != addr || st.Timeouts.Request.D() != 25*time.Second {
		t.Errorf("after the reload: listening %s timeouts %v; want %s and request 25s", st.Listening, st.Timeouts, addr)
	}
	if after := e.b.IdentityOf("a"); after.FrontDoor == before.FrontDoor {
		t.Errorf("the front door was not replaced")
	}
	// A new connection is served (by the new front door).
	if got := get(t, httpClient(t), "http://"+addr+"/fast"); got.status != http.StatusOK || got.body != "done" {
		t.Errorf("a call after the reload: %d %q", got.status, got.body)
	}
	// The call in flight finishes on the old one.
	close(release)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the call in flight during the reload: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "done" {
		t.Errorf("the call in flight during the reload: %d %q", resp.StatusCode, body)
	}
}

// TestReloadUnderLoad: calls run without pause to an untouched group over
// real sockets while reloads add a group, change one and remove one; not
// one of them fails.
func TestReloadUnderLoad(t *testing.T) {
	t.Parallel()
	r1, r2 := newReplica(t, named("r1")), newReplica(t, named("r2"))
	keep := declared("keep", strategy.RoundRobinName, r1.URL, r2.URL)
	keep.Binding = protocol.PerRequest
	change := declared("change", strategy.RoundRobinName, r1.URL)
	change.Binding = protocol.PerRequest
	gone := declared("gone", strategy.RoundRobinName, r2.URL)
	e := newEnv(t, envOptions{config: []protocol.Group{keep, change, gone}})
	eventually(t, 10*time.Second, func() error {
		if n := len(e.b.EligibleIDs("keep")); n != 2 {
			return fmt.Errorf("%d eligible replicas in keep, want 2", n)
		}
		return nil
	})
	url := "http://" + e.mustGroup("keep").Listening + "/"

	var calls, failed atomic.Int64
	var firstErr atomic.Value
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := httpClient(t)
			for ctx.Err() == nil {
				resp, err := c.Get(url)
				if err == nil {
					body, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					if rerr != nil || resp.StatusCode != http.StatusOK || (string(body) != "r1" && string(body) != "r2") {
						err = fmt.Errorf("answer %d %q (%v)", resp.StatusCode, body, rerr)
					}
				}
				calls.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	// Reloads while the calls run: each waits for calls to have gone
	// through since the last.
	waitCalls := func(n int64) {
		target := calls.Load() + n
		eventually(t, 10*time.Second, func() error {
			if got := calls.Load(); got < target {
				return fmt.Errorf("%d calls, want %d", got, target)
			}
			return nil
		})
	}
	waitCalls(200)
	added := declared("added", strategy.RoundRobinName, r1.URL)
	change2 := change
	change2.Strategy = strategy.RandomName
	change2.Timeouts.Request = protocol.Duration(7 * time.Second)
	for i, groups := range [][]protocol.Group{
		{keep, change2, added},      // added, changed, removed
		{keep, change, added, gone}, // changed back, gone again
		{keep, change2},             // changed, added removed, gone removed
	} {
		if _, err := e.b.Reload(groups); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		waitCalls(200)
	}
	cancel()
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d of %d calls to the untouched group failed; first: %v", failed.Load(), calls.Load(), firstErr.Load())
	}
	t.Logf("%d calls to the untouched group during 3 reloads, %d failed", calls.Load(), failed.Load())
}

// A front door address one group lets go of in a reload (deleted, or
// moved) can be taken by another in the same reload, whatever the order
// of the file.
func TestReloadAddressHandedOver(t *testing.T) {
	t.Parallel()
	addrA, addrB, addrC := freeLoopbackAddr(t), freeLoopbackAddr(t), freeLoopbackAddr(t)
	p := declared("p", strategy.RoundRobinName)
	p.FrontDoor = addrA
	gone := declared("gone", strategy.RoundRobinName)
	gone.FrontDoor = addrC
	e := newEnv(t, envOptions{config: []protocol.Group{p, gone}})

	q := declared("q", strategy.RoundRobinName)
	q.FrontDoor = addrA // p's, which moves to B
	r := declared("r", strategy.RoundRobinName)
	r.FrontDoor = addrC // gone's, which is deleted
	p2 := p
	p2.FrontDoor = addrB
	res, err := e.b.Reload([]protocol.Group{q, r, p2})
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if !slices.Equal(res.Added, []string{"q", "r"}) || !slices.Equal(res.Changed, []string{"p"}) || !slices.Equal(res.Removed, []string{"gone"}) {
		t.Errorf("Reload = %+v", res)
	}
	for name, want := range map[string]string{"p": addrB, "q": addrA, "r": addrC} {
		if got := e.mustGroup(name).Listening; got != want {
			t.Errorf("group %s listens on %q, want %s", name, got, want)
		}
	}
}
