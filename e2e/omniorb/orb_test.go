//go:build linux

package omniorb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench/omniorb"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"

	"go.uber.org/goleak"
)

// orbs are the Prime programs built from internal/bench/omniorb's
// sources, once per test run.
type orbs struct {
	server   string // the C++ server binary
	client   string // the C++ client binary
	pyClient string // prime_client.py
	pyPath   string // PYTHONPATH with the omniORBpy stubs
	python   string // the python3 with omniORBpy; "" when missing
	pyErr    string // why python is ""
}

var (
	buildOnce sync.Once
	built     *orbs
	buildErr  error  // a build that failed
	missing   string // a missing tool, reported per test
	buildDir  string // set by TestMain
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fulcrum-omniorb-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "omniorb:", err)
		os.Exit(1)
	}
	buildDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// needORBs returns the built programs; it skips the test when the C++
// toolchain or omniORB is missing (fails it with CI=true) and fails it
// when the build fails.
func needORBs(t *testing.T) *orbs {
	t.Helper()
	buildOnce.Do(func() { built, missing, buildErr = buildORBs(buildDir) })
	if missing != "" {
		needCI(t, "%s", missing)
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// needPython is needORBs for the omniORBpy client.
func needPython(t *testing.T) *orbs {
	t.Helper()
	o := needORBs(t)
	if o.python == "" {
		needCI(t, "%s", o.pyErr)
	}
	return o
}

func buildORBs(dir string) (o *orbs, missing string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	progs, err := omniorb.Build(ctx, dir)
	if me := (*omniorb.MissingError)(nil); errors.As(err, &me) {
		return nil, me.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	o = &orbs{
		server:   progs.Server,
		client:   progs.Client,
		pyClient: omniorb.PyClient(dir),
		pyPath:   filepath.Join(dir, "py"),
	}
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}

	// omniORBpy: the python3 on PATH must import it; its own omniidl makes
	// the Python stubs.
	python, err := exec.LookPath("python3")
	if err != nil {
		o.pyErr = "python3 is not installed: " + err.Error()
		return o, "", nil
	}
	if out, err := exec.CommandContext(ctx, python, "-c", "import omniORB").CombinedOutput(); err != nil {
		o.pyErr = fmt.Sprintf("omniORBpy (PyPI jeteve-omniorb) is not importable by %s: %v: %s", python, err, strings.TrimSpace(string(out)))
		return o, "", nil
	}
	if err := os.Mkdir(o.pyPath, 0o755); err != nil {
		return nil, "", err
	}
	omniidlPy := `import sys; from omniidl.main import main; sys.argv[0] = "omniidl"; sys.exit(main())`
	if err := run(python, "-c", omniidlPy, "-bpython", "-C", o.pyPath, omniorb.IDL(dir)); err != nil {
		return nil, "", err
	}
	o.python = python
	return o, "", nil
}

// server is a running prime_server.
type server struct {
	*proctest.Proc
	ior  string
	port int
}

var iorLine = regexp.MustCompile(`(?m)^(IOR:[0-9a-f]+)$`)

// startServer starts a C++ Prime server on a free loopback port (or on
// port when not 0), logging its calls.
func (o *orbs) startServer(ctx context.Context, t *testing.T, name string, port int) *server {
	t.Helper()
	return o.startServerArgs(ctx, t, name, "--log-calls", "--port", strconv.Itoa(port))
}

// startServerArgs starts a C++ Prime server with args.
func (o *orbs) startServerArgs(ctx context.Context, t *testing.T, name string, args ...string) *server {
	t.Helper()
	p := proctest.Start(t, name, proctest.Options{}, o.server, args...)
	s := &server{Proc: p, ior: p.WaitOutput(ctx, t, p.Stdout, iorLine)[1]}
	s.port = iorPort(t, s.ior)
	return s
}

// corbaloc is the server's object as a corbaloc URL.
func (s *server) corbaloc() string { return fmt.Sprintf("corbaloc:iiop:127.0.0.1:%d/Prime", s.port) }

// endpoint is the server's address as omniORB names it in "peer" fields.
func (s *server) endpoint() string { return fmt.Sprintf("giop:tcp:127.0.0.1:%d", s.port) }

// servedCall is one line of prime_server --log-calls.
type servedCall struct {
	Op   string `json:"op"`
	Arg  int64  `json:"arg"`
	Peer string `json:"peer"`
}

// calls returns the calls the server has logged so far.
func (s *server) calls(t *testing.T) []servedCall {
	t.Helper()
	return jsonLines[servedCall](t, s.Stdout.String(), func(l string) bool { return strings.Contains(l, `"op"`) })
}

// callsWithArg counts the served calls with argument arg.
func (s *server) callsWithArg(t *testing.T, arg int64) int {
	n := 0
	for _, c := range s.calls(t) {
		if c.Arg == arg {
			n++
		}
	}
	return n
}

// waitCalls waits until the server has logged n calls with argument arg
// (its output reaches the test asynchronously), failing the test if it
// logs more.
func (s *server) waitCalls(ctx context.Context, t *testing.T, arg int64, n int) {
	t.Helper()
	proctest.Poll(ctx, t, fmt.Sprintf("%s logging %d calls with argument %d", s.Name, n, arg), func() (bool, string) {
		got := s.callsWithArg(t, arg)
		if got > n {
			t.Fatalf("%s logged %d calls with argument %d, want %d", s.Name, got, arg, n)
		}
		return got == n, fmt.Sprintf("%d calls", got)
	})
}

// iorPort reads the port of the first IIOP profile of a stringified IOR
// as omniORB's servers write them (one profile, little- or big-endian).
// It is a test helper for our own server's output, not a general decoder.
func iorPort(t *testing.T, ior string) int {
	t.Helper()
	b := make([]byte, (len(ior)-4)/2)
	for i := range b {
		v, err := strconv.ParseUint(ior[4+2*i:6+2*i], 16, 8)
		if err != nil {
			t.Fatalf("IOR %q: %v", ior, err)
		}
		b[i] = byte(v)
	}
	// The server binds 127.0.0.1: the profile's host string is followed,
	// after alignment to 2, by the port.
	host := []byte("127.0.0.1\x00")
	i := strings.Index(string(b), string(host))
	if i < 0 || i+len(host)+3 > len(b) {
		t.Fatalf("IOR %q: no 127.0.0.1 profile", ior)
	}
	j := i + len(host)
	j += j % 2
	if b[0] == 1 { // little-endian
		return int(b[j]) | int(b[j+1])<<8
	}
	return int(b[j])<<8 | int(b[j+1])
}

// summary is a client's summary line.
type summary struct {
	Summary     bool           `json:"summary"`
	Calls       int            `json:"calls"`
	OK          int            `json:"ok"`
	CommFailure int            `json:"comm_failure"`
	Transient   int            `json:"transient"`
	Other       int            `json:"other"`
	ResolveUs   int64          `json:"resolve_us"`
	FirstUs     int64          `json:"first_us"`
	MeanUs      int64          `json:"mean_us"`
	ElapsedUs   int64          `json:"elapsed_us"`
	Sends       int            `json:"sends"`
	Peers       map[string]int `json:"peers"`
	Errors      map[string]int `json:"errors"`
}

// callLine is a client's --per-call line.
type callLine struct {
	Call   int    `json:"call"`
	OK     bool   `json:"ok"`
	Result any    `json:"result"`
	Error  string `json:"error"`
	Us     int64  `json:"us"`
	Peer   string `json:"peer"`  // C++ client only
	Sends  int    `json:"sends"` // C++ client only
}

// clientKind is the ORB of a client process.
type clientKind string

const (
	cxxClient clientKind = "omniORB C++"
	pyClient  clientKind = "omniORBpy"
)

// clientCommand returns the path, arguments and environment that run the
// client of kind k with args.
func (o *orbs) clientCommand(k clientKind, args ...string) (string, []string, []string) {
	if k == pyClient {
		return o.python, append([]string{o.pyClient}, args...), []string{"PYTHONPATH=" + o.pyPath}
	}
	return o.client, args, nil
}

// runClient runs a client to completion and returns its exit code, its
// per-call lines and its last summary.
func (o *orbs) runClient(ctx context.Context, t *testing.T, k clientKind, args ...string) (int, []callLine, summary) {
	t.Helper()
	path, argv, env := o.clientCommand(k, args...)
	p := proctest.Start(t, string(k)+" client", proctest.Options{Env: env}, path, argv...)
	return clientResult(ctx, t, k, p, args)
}

// startClient starts a client; clientResult then waits for its results.
func (o *orbs) startClient(t *testing.T, k clientKind, args ...string) *proctest.Proc {
	t.Helper()
	path, argv, env := o.clientCommand(k, args...)
	return proctest.Start(t, string(k)+" client", proctest.Options{Env: env}, path, argv...)
}

// clientResult waits for client p (started with args) to exit and
// returns its exit code, per-call lines and last summary.
func clientResult(ctx context.Context, t *testing.T, k clientKind, p *proctest.Proc, args []string) (int, []callLine, summary) {
	t.Helper()
	code := p.Exit(ctx, t)
	out := p.Stdout.String()
	calls := jsonLines[callLine](t, out, func(l string) bool { return strings.HasPrefix(l, `{"call"`) })
	sums := jsonLines[summary](t, out, func(l string) bool { return strings.HasPrefix(l, `{"summary"`) })
	if len(sums) == 0 {
		t.Fatalf("%s client %s: no summary line (exit %d)\nstdout:\n%s\nstderr:\n%s", k, strings.Join(args, " "), code, out, p.Stderr)
	}
	return code, calls, sums[len(sums)-1]
}

// liveClient is a client in --interactive mode: each batch makes n calls
// and returns their summary.
type liveClient struct {
	*proctest.Proc
	kind    clientKind
	batches int
}

func (o *orbs) startLiveClient(t *testing.T, k clientKind, args ...string) *liveClient {
	t.Helper()
	path, argv, env := o.clientCommand(k, append([]string{"--interactive"}, args...)...)
	p := proctest.Start(t, string(k)+" client", proctest.Options{Env: env, Stdin: true}, path, argv...)
	return &liveClient{Proc: p, kind: k}
}

var summaryLine = regexp.MustCompile(`(?m)^\{"summary".*\}$`)

// batch makes n calls and returns their summary.
func (c *liveClient) batch(ctx context.Context, t *testing.T, n int) summary {
	t.Helper()
	c.startBatch(t, n)
	return c.waitBatch(ctx, t)
}

// startBatch asks for n calls without waiting for them.
func (c *liveClient) startBatch(t *testing.T, n int) {
	t.Helper()
	if _, err := fmt.Fprintf(c.Stdin, "%d\n", n); err != nil {
		t.Fatalf("%s: writing to stdin: %v", c.Name, err)
	}
	c.batches++
}

// waitBatch waits for the summary of the last batch started.
func (c *liveClient) waitBatch(ctx context.Context, t *testing.T) summary {
	t.Helper()
	want := c.batches
	for {
		s, changed := c.Stdout.Snapshot()
		sums := jsonLines[summary](t, s, func(l string) bool { return summaryLine.MatchString(l) })
		if len(sums) >= want {
			return sums[want-1]
		}
		select {
		case <-changed:
		case <-c.Done():
			t.Fatalf("%s exited (%v) during batch %d", c.Name, c.Err(), want)
		case <-ctx.Done():
			t.Fatalf("%s: batch %d did not finish: %v", c.Name, want, ctx.Err())
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
