//go:build linux

package proctest

import (
	"context"
	"net"
	"os"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// FDLimitEnv is the environment variable that makes a re-executed test
// binary the child of a descriptor-exhaustion test: its value is the
// child's RLIMIT_NOFILE.
const FDLimitEnv = "FULCRUM_TEST_FD_LIMIT"

// FDLimitChild reports whether this process is the child of a
// descriptor-exhaustion test started by StartFDLimitChild; if it is, it
// has lowered its own RLIMIT_NOFILE to the limit asked for. The child runs
// the same test function, which serves what the parent floods, prints the
// address to stdout as "addr=<host:port>", and returns when stdin ends.
//
//	if proctest.FDLimitChild(t) {
//		serve(t, ln) // in the background
//		fmt.Printf("addr=%s\n", ln.Addr())
//		proctest.WaitStdin()
//		return
//	}
func FDLimitChild(t testing.TB) bool {
	t.Helper()
	v := os.Getenv(FDLimitEnv)
	if v == "" {
		return false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", FDLimitEnv, v, err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
		t.Fatalf("setrlimit NOFILE %d: %v", n, err)
	}
	return true
}

// WaitStdin blocks until stdin ends: the parent closed it.
func WaitStdin() {
	var b [64]byte
	for {
		if _, err := os.Stdin.Read(b[:]); err != nil {
			return
		}
	}
}

// StartFDLimitChild re-executes the test binary to run only test (the
// calling test's name) as a child with RLIMIT_NOFILE at limit, and returns
// it once it has printed its address, with that address. Closing the
// child's Stdin ends it.
func StartFDLimitChild(ctx context.Context, t *testing.T, limit int) (*Proc, string) {
	t.Helper()
	p := Start(t, t.Name()+" child", Options{Env: []string{FDLimitEnv + "=" + strconv.Itoa(limit)}, Stdin: true},
		os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1")
	m := p.WaitOutput(ctx, t, p.Stdout, regexp.MustCompile(`addr=(\S+)`))
	return p, m[1]
}

// ExhaustDescriptors opens connections to addr until the child p holds
// limit descriptors (its RLIMIT_NOFILE), then extra more, so that the
// child's next accept fails with EMFILE; it returns the connections. It
// fails t if that does not happen within maxConns connections or before
// ctx ends. Connections complete in the kernel's accept queue whether or
// not the child accepts them, so dialing does not wait on the child.
func ExhaustDescriptors(ctx context.Context, t testing.TB, p *Proc, addr string, limit, extra, maxConns int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	t.Cleanup(func() { closeAll(conns) })
	var d net.Dialer
	dial := func() {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		nc, err := d.DialContext(dctx, "tcp", addr)
		if err != nil {
			t.Fatalf("dial %s after %d connections: %v", addr, len(conns), err)
		}
		conns = append(conns, nc)
	}
	held := func() int { return heldDescriptors(p) }
	for held() < limit {
		if len(conns) >= maxConns {
			Poll(ctx, t, "the child to hold its limit of descriptors", func() (bool, string) {
				n := held()
				return n >= limit, strconv.Itoa(n) + " held"
			})
			break
		}
		dial()
	}
	for range extra {
		dial()
	}
	return conns
}

// RunOutOfDescriptors starts the child (StartFDLimitChild), floods its
// address with connections until it runs out of descriptors
// (ExhaustDescriptors, 16 beyond the limit), closes them, and waits until
// the child has let go of them (it holds at most 2 descriptors more than
// before the flood): the child is then to serve again, a call that needs
// a descriptor or two of its own (an accepted connection, a dial
// upstream) included. It returns the child, its address and how many
// connections it took.
func RunOutOfDescriptors(ctx context.Context, t *testing.T, limit int) (p *Proc, addr string, flood int) {
	t.Helper()
	p, addr = StartFDLimitChild(ctx, t, limit)
	before := heldDescriptors(p)
	conns := ExhaustDescriptors(ctx, t, p, addr, limit, 16, 1000)
	closeAll(conns)
	Poll(ctx, t, "the child to let go of the flood's descriptors", func() (bool, string) {
		n := heldDescriptors(p)
		return n <= before+2, strconv.Itoa(n) + " held, " + strconv.Itoa(before) + " before the flood"
	})
	return p, addr, len(conns)
}

// heldDescriptors is how many descriptors p holds.
func heldDescriptors(p *Proc) int {
	ents, _ := os.ReadDir("/proc/" + strconv.Itoa(p.Pid()) + "/fd")
	return len(ents)
}

// EndFDLimitChild closes the child's stdin and fails t unless it exits 0.
func EndFDLimitChild(ctx context.Context, t testing.TB, p *Proc) {
	t.Helper()
	_ = p.Stdin.Close()
	if code := p.Exit(ctx, t); code != 0 {
		t.Errorf("%s exited %d", p.Name, code)
	}
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		_ = c.Close()
	}
}
