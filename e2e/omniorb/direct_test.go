//go:build linux

package omniorb

import (
	"fmt"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// The omniORB C++ client calls the omniORB C++ server directly, through
// its IOR and its corbaloc URL: the baseline every fulcrum test builds on.
func TestCxxClientDirect(t *testing.T) {
	o := needORBs(t)
	ctx := testContext(t, time.Minute)
	srv := o.startServer(ctx, t, "server", 0)
	for i, ref := range []string{srv.ior, srv.corbaloc()} {
		arg := int64(1_000_003 + 2*i)
		code, calls, sum := o.runClient(ctx, t, cxxClient, "--calls", "5", "--per-call", "--arg", fmt.Sprint(arg), ref)
		if code != 0 || sum.Calls != 5 || sum.OK != 5 || len(calls) != 5 {
			t.Fatalf("%s: exit %d, summary %+v, %d call lines; want 5 calls, all ok", ref[:12], code, sum, len(calls))
		}
		for _, c := range calls {
			if c.Peer != srv.endpoint() || c.Sends != 1 {
				t.Errorf("%s: call %d went to %q in %d requests, want %s in 1", ref[:12], c.Call, c.Peer, c.Sends, srv.endpoint())
			}
		}
		if want := isPrime(arg); calls[0].Result != want {
			t.Errorf("is_prime(%d) = %v, want %v", arg, calls[0].Result, want)
		}
		srv.waitCalls(ctx, t, arg, 5)
	}
	code, calls, sum := o.runClient(ctx, t, cxxClient, "--op", "prime_count", "--arg", "100", "--per-call", srv.corbaloc())
	if code != 0 || sum.OK != 1 || calls[0].Result != float64(25) {
		t.Errorf("prime_count(100): exit %d, %+v, want 25", code, calls)
	}
}

// The omniORBpy client calls the omniORB C++ server directly.
func TestPythonClientDirect(t *testing.T) {
	o := needPython(t)
	ctx := testContext(t, time.Minute)
	srv := o.startServer(ctx, t, "server", 0)
	for i, ref := range []string{srv.ior, srv.corbaloc()} {
		arg := int64(1_000_002 + i) // 1000002 is even, 1000003 prime
		code, calls, sum := o.runClient(ctx, t, pyClient, "--calls", "5", "--per-call", "--arg", fmt.Sprint(arg), ref)
		if code != 0 || sum.Calls != 5 || sum.OK != 5 || len(calls) != 5 {
			t.Fatalf("%s: exit %d, summary %+v, %d call lines; want 5 calls, all ok", ref[:12], code, sum, len(calls))
		}
		if want := isPrime(arg); calls[0].Result != want {
			t.Errorf("is_prime(%d) = %v, want %v", arg, calls[0].Result, want)
		}
		srv.waitCalls(ctx, t, arg, 5)
	}
}

// Clients report a dead server as an error in their summary, not a hang:
// both fail to resolve a reference to a closed port (exit 1, TRANSIENT
// on stderr).
func TestClientsNoServer(t *testing.T) {
	o := needORBs(t)
	ctx := testContext(t, time.Minute)
	srv := o.startServer(ctx, t, "server", 0)
	ref := srv.corbaloc()
	srv.Kill9(ctx, t)
	kinds := []clientKind{cxxClient}
	if o.python != "" {
		kinds = append(kinds, pyClient)
	}
	for _, k := range kinds {
		path, argv, env := o.clientCommand(k, ref)
		p := proctest.Start(t, string(k)+" client", proctest.Options{Env: env}, path, argv...)
		if code := p.Exit(ctx, t); code != 1 {
			t.Errorf("%s client against a dead server: exit %d, want 1", k, code)
		}
		if s := p.Stderr.String(); !containsAll(s, "TRANSIENT") {
			t.Errorf("%s client stderr %q does not name TRANSIENT", k, s)
		}
	}
}

func isPrime(n int64) bool {
	if n < 2 {
		return false
	}
	for d := int64(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}
