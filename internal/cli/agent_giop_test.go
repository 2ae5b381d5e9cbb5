package cli

import (
	"bytes"
	"context"
	"errors"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

const testPrimeIOR = "corbaloc:iiop:1.2@127.0.0.1:2809/Prime"

func TestAgentGIOPRejectsBadFlags(t *testing.T) {
	t.Parallel()
	reg := []string{"--register", "http://a", "--group", "g"}
	base := append([]string{"--listen", "127.0.0.1:0", "--target", testPrimeIOR}, reg...)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--listen is required"},
		{[]string{"--listen", "4100"}, `--listen "4100": must be host:port`},
		{[]string{"--listen", "127.0.0.1:0"}, "--target is required"},
		{[]string{"--listen", "127.0.0.1:0", "--target", "http://x"}, `--target: ior: reference must start with "IOR:" or "corbaloc:"`},
		{[]string{"--listen", "127.0.0.1:0", "--target", "IOR:0000"}, "--target: ior: stringified IOR"},
		{[]string{"--listen", "127.0.0.1:0", "--target", "IOR:abc"}, "odd number (3) of hex digits"},
		{[]string{"--listen", "127.0.0.1:0", "--target", "corbaloc:rir:/NameService"}, "--target: ior: corbaloc address 1"},
		{[]string{"--listen", "0.0.0.0:4100", "--target", testPrimeIOR}, "wildcard address: give --advertise"},
		{[]string{"--listen", ":4100", "--target", testPrimeIOR}, "wildcard address: give --advertise"},
		{[]string{"--listen", "127.0.0.1:0", "--target", testPrimeIOR, "--advertise", "h:0"}, `--advertise "h:0": port must be in 1-65535`},
		{[]string{"--listen", "127.0.0.1:0", "--target", testPrimeIOR}, "--register ADMIN_URL (with --group) or --token is required"},
		{[]string{"--listen", "127.0.0.1:0", "--target", testPrimeIOR, "--register", "http://a"}, "--group is required"},
		{append(base, "--load", "memory"), `--load "memory": must be rate, inflight or latency`},
		{append(base, "--load", "cpu"), "--load cpu: the agent measures its own process's CPU"},
		{append(base, "--mode", "pull"), "--mode pull needs --pull-listen"},
		{append(base, "--mode", "poll"), `--mode "poll": must be push or pull`},
		{append(base, "--pull-listen", "127.0.0.1:0"), "--pull-listen needs --mode pull"},
		{append(base, "--mode", "pull", "--pull-listen", "127.0.0.1:0", "--pull-advertise", "x:1"), `--pull-advertise "x:1": must be an absolute`},
		{append(base, "--max-message-size", "10"), "--max-message-size 10: must be in [1024, 1073741824]"},
		{append(base, "--dial-timeout", "0s"), "--dial-timeout 0s: must be > 0"},
	} {
		_, errOut, code := runCtl(t, "", append([]string{"agent", "giop"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("agent giop %s: exit %d, %q; want exit 2 mentioning %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

func TestAgentGIOPHelp(t *testing.T) {
	t.Parallel()
	out, _, code := runCtl(t, "", "agent", "giop", "--help")
	for _, want := range []string{"--listen", "--target", "--advertise", "--register", "--group", "--mode", "--pull-listen", "--type-id", "LOCATION_FORWARD"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}

var (
	agentListeningRE = regexp.MustCompile(`(?m)^listening on (\S+)$`)
	agentReferenceRE = regexp.MustCompile(`(?m)^reference (IOR:[0-9a-f]+)$`)
)

// syncBuffer is a bytes.Buffer safe to read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAgentGIOPRegistersPassesCallsAndDeregisters runs "fulcrum agent
// giop" in front of the Go Prime servant (by corbaloc, typed with
// --type-id) against a real balancer with a GIOP group: it registers its
// own reference, a client ORB calling the group's corbaloc is forwarded by
// the front door to the agent and its calls pass through to the servant,
// the pulled reports count them, and the agent deregisters when it stops.
func TestAgentGIOPRegistersPassesCallsAndDeregisters(t *testing.T) {
	t.Parallel()
	admin, b := ctlServer(t, "")
	if _, _, err := b.PutGroup(protocol.Group{Name: "prime", Protocol: protocol.ProtocolGIOP, FrontDoor: "127.0.0.1:0",
		Binding: protocol.OnDemand, ReportInterval: protocol.Duration(50 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := backend.NewGIOPPrime(backend.GIOPPrimeOptions{})
	go srv.Serve(ln)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	target := "corbaloc:iiop:1.2@" + ln.Addr().String() + "/" + backend.GIOPPrimeKey

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := NewRoot()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetArgs([]string{"agent", "giop", "--listen", "127.0.0.1:0", "--target", target, "--type-id", giop.PrimeRepoID,
		"--register", admin, "--group", "prime", "--mode", "pull", "--pull-listen", "127.0.0.1:0"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	waitCLI(t, done, errOut, "the agent registered and pulled", func() bool {
		st, err := b.Group("prime")
		return err == nil && len(st.Replicas) == 1 && st.Replicas[0].ReportAgeMS != nil
	})
	listen := agentListeningRE.FindStringSubmatch(out.String())
	refLine := agentReferenceRE.FindStringSubmatch(out.String())
	if listen == nil || refLine == nil {
		t.Fatalf("output %q, want listening on and reference lines", out.String())
	}
	st, _ := b.Group("prime")
	if st.Replicas[0].Address != refLine[1] {
		t.Errorf("registered address %s, want the printed reference %s", st.Replicas[0].Address, refLine[1])
	}
	ref, err := ior.Parse(refLine[1])
	if err != nil {
		t.Fatal(err)
	}
	p, _ := ref.IIOP()
	if ref.TypeID != giop.PrimeRepoID || string(p.ObjectKey) != backend.GIOPPrimeKey || net.JoinHostPort(p.Host, itoa(int(p.Port))) != listen[1] {
		t.Errorf("reference %+v, want %s, key %s, at %s", ref, giop.PrimeRepoID, backend.GIOPPrimeKey, listen[1])
	}

	o, err := orb.New(orb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	obj, err := o.Resolve(st.Reference.Corbaloc)
	if err != nil {
		t.Fatal(err)
	}
	prime := orb.Prime{Object: obj}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	for n := int32(2); n < 50; n++ {
		got, _, err := prime.IsPrime(cctx, n)
		if err != nil || got != isPrimeSlow(n) {
			t.Fatalf("is_prime(%d) through the group: %v, %v", n, got, err)
		}
	}
	if tp, _ := obj.Target().IIOP(); net.JoinHostPort(tp.Host, itoa(int(tp.Port))) != listen[1] {
		t.Errorf("the client ended at %s:%d, want the agent at %s", tp.Host, tp.Port, listen[1])
	}
	waitCLI(t, done, errOut, "the calls in a pulled report", func() bool {
		st, _ := b.Group("prime")
		return len(st.Replicas) == 1 && st.Replicas[0].Metrics["rps"] > 0
	})

	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("agent: %v\n%s", err, errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("agent did not stop within 15s of its context ending")
	}
	st, _ = b.Group("prime")
	if len(st.Replicas) != 0 && st.Replicas[0].State != "draining" {
		t.Errorf("replica %s after the agent stopped, want draining or gone", st.Replicas[0].State)
	}
}

func waitCLI(t *testing.T, done <-chan error, errOut *syncBuffer, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case err := <-done:
			t.Fatalf("agent exited early: %v\n%s", err, errOut.String())
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s\n%s", what, errOut.String())
		case <-tick.C:
		}
	}
}

func isPrimeSlow(n int32) bool {
	if n < 2 {
		return false
	}
	for d := int32(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

func itoa(n int) string { return strconv.Itoa(n) }
