//go:build linux

package omniorb

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// Unmodified omniORB C++ and omniORBpy clients call through the group's
// corbaloc URL against three omniORB C++ replicas, on-demand and
// per-session with round-robin: every call succeeds; each client's first
// call is forwarded and the rest go straight to its replica (the front
// door sees one request per client connection, the replica sees every
// call of the client); and round-robin binds the three clients to three
// different replicas.
func TestBoundThroughCorbaloc(t *testing.T) {
	for _, binding := range []string{"on-demand", "per-session"} {
		for _, k := range []clientKind{cxxClient, pyClient} {
			t.Run(binding+"/"+string(k), func(t *testing.T) { testBoundThroughCorbaloc(t, binding, k) })
		}
	}
}

func testBoundThroughCorbaloc(t *testing.T, binding string, k clientKind) {
	o := needORBs(t)
	if k == pyClient {
		o = needPython(t)
	}
	ctx := testContext(t, time.Minute)
	r := o.startRig(ctx, t, rigOpts{binding: binding, report: "1h"})
	const calls = 10
	bound := map[int]int{} // replica -> clients
	for i := range 3 {
		arg := int64(1_000_003 + 2*i)
		code, lines, sum := o.runClient(ctx, t, k, "--calls", strconv.Itoa(calls), "--per-call", "--arg", fmt.Sprint(arg), r.corbaloc)
		if code != 0 || sum.OK != calls {
			t.Fatalf("client %d: exit %d, summary %+v; want %d calls, all ok", i, code, sum, calls)
		}
		if lines[0].Result != isPrime(arg) {
			t.Errorf("client %d: is_prime(%d) = %v, want %v", i, arg, lines[0].Result, isPrime(arg))
		}
		r.waitServed(ctx, t, arg, calls)
		idx := r.servingOnly(t, arg)
		bound[idx]++
		if got := r.servedBy(t, arg)[idx]; got != calls {
			t.Errorf("client %d: replica %d served %d of its calls, want all %d", i, idx, got, calls)
		}
		if peers := r.peersFor(t, arg)[idx]; len(peers) != 1 {
			t.Errorf("client %d: replica %d saw its calls on %d connections %v, want 1", i, idx, len(peers), peers)
		}
		if k == cxxClient {
			want := r.servers[idx].endpoint()
			for _, c := range lines {
				if c.Peer != want {
					t.Errorf("client %d: call %d went to %s, want replica %d at %s", i, c.Call, c.Peer, idx, want)
				}
				if c.Call > 1 && c.Sends != 1 {
					t.Errorf("client %d: call %d took %d requests, want 1 (straight to the replica)", i, c.Call, c.Sends)
				}
			}
		}
		// The front door saw this client's connection once.
		if n := r.redirected(ctx, t); n != uint64(i+1) {
			t.Errorf("after client %d: the front door redirected %d times, want %d (one per client connection)", i, n, i+1)
		}
	}
	if len(bound) != 3 {
		t.Errorf("round-robin bound 3 clients to replicas %v, want one on each of 3", bound)
	}
}

// Bindings follow the strategy: six clients started together are spread
// two per replica by round-robin.
func TestOnDemandRoundRobinSpreads(t *testing.T) {
	o := needORBs(t)
	ctx := testContext(t, time.Minute)
	r := o.startRig(ctx, t, rigOpts{report: "1h"})
	const clients, calls = 6, 5
	ps := make([]*proctest.Proc, clients)
	for i := range ps {
		k := cxxClient
		if i%2 == 1 && o.python != "" {
			k = pyClient
		}
		ps[i] = o.startClient(t, k, "--calls", strconv.Itoa(calls), "--arg", fmt.Sprint(2_000_000+i), r.corbaloc)
	}
	perReplica := make([]int, len(r.servers))
	for i, p := range ps {
		k := clientKind(p.Name[:len(p.Name)-len(" client")])
		if code, _, sum := clientResult(ctx, t, k, p, nil); code != 0 || sum.OK != calls {
			t.Fatalf("client %d: exit %d, summary %+v", i, code, sum)
		}
		r.waitServed(ctx, t, int64(2_000_000+i), calls)
		perReplica[r.servingOnly(t, int64(2_000_000+i))]++
	}
	for _, n := range perReplica {
		if n != clients/len(r.servers) {
			t.Errorf("round-robin bound clients per replica %v, want %d each", perReplica, clients/len(r.servers))
			break
		}
	}
	if n := r.redirected(ctx, t); n != clients {
		t.Errorf("the front door redirected %d times, want %d (one per client)", n, clients)
	}
}

// Per-request mode carries the same calls: every call goes to the front
// door, which proxies it to a replica; round-robin spreads the calls.
func TestPerRequestCarriesCalls(t *testing.T) {
	o := needORBs(t)
	ctx := testContext(t, time.Minute)
	r := o.startRig(ctx, t, rigOpts{binding: "per-request", report: "1h"})
	const calls = 30
	code, lines, sum := o.runClient(ctx, t, cxxClient, "--calls", strconv.Itoa(calls), "--per-call", "--arg", "1000003", r.corbaloc)
	if code != 0 || sum.OK != calls {
		t.Fatalf("C++ client: exit %d, summary %+v; want %d calls, all ok", code, sum, calls)
	}
	for _, c := range lines {
		if c.Peer != r.front || c.Sends != 1 || c.Result != true {
			t.Errorf("call %d: went to %s in %d requests, result %v; want the front door %s, 1, true", c.Call, c.Peer, c.Sends, c.Result, r.front)
		}
	}
	by := r.waitServed(ctx, t, 1_000_003, calls)
	for _, n := range by {
		if n != calls/len(by) {
			t.Errorf("replicas served %v of the %d calls, want %d each (round-robin per call)", by, calls, calls/len(by))
			break
		}
	}
	if n := r.proxied(ctx, t); n < calls {
		t.Errorf("the front door proxied %d calls, want at least %d", n, calls)
	}
	if n := r.redirected(ctx, t); n != 0 {
		t.Errorf("the front door redirected %d calls in per-request mode, want 0", n)
	}
	if o.python == "" {
		needPython(t)
		return
	}
	code, lines, sum = o.runClient(ctx, t, pyClient, "--calls", strconv.Itoa(calls), "--per-call", "--op", "prime_count", "--arg", "1000", r.corbaloc)
	if code != 0 || sum.OK != calls || lines[0].Result != float64(168) {
		t.Fatalf("Python client: exit %d, summary %+v, first %+v; want %d calls, all ok, prime_count(1000) = 168", code, sum, lines[0], calls)
	}
	total := 0
	for _, n := range r.waitServed(ctx, t, 1000, calls) {
		total += n
	}
	if total != calls {
		t.Errorf("replicas served %d of the Python client's %d calls", total, calls)
	}
}
