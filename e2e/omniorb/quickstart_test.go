//go:build linux

package omniorb

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench/omniorb"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// readmeBuild is how the README's CORBA quick start builds the omniORB
// Prime server (the block holding these lines is run as it stands).
var readmeBuild = []string{
	"omniidl -bcxx prime.idl",
	"g++ -o prime_server prime_server.cc primeSK.cc -lomniORB4 -lomnithread",
}

// readmeServer is how the quick start then starts the server it built.
const readmeServer = "./omniorb-prime/prime_server --port "

// TestReadmeCORBAQuickStart runs the README's build commands for the
// omniORB Prime server, exactly as written, in a copy of the checkout's
// layout (the sources from internal/bench/omniorb/src), then starts the
// server as the README does and checks that it prints its IOR first, for
// the port it was given, and serves calls. Then it runs the rest of the
// quick start: the README's GIOP group (its front door on port 0),
// the server behind "fulcrum agent giop --target <IOR>", and an omniORB
// client of the group's corbaloc, whose calls after the first go straight
// to the agent. Without omniORB it skips, and fails with CI=true.
func TestReadmeCORBAQuickStart(t *testing.T) {
	if _, err := omniorb.Check(); err != nil {
		if me := (*omniorb.MissingError)(nil); errors.As(err, &me) {
			needCI(t, "%s", me.Error())
		}
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := shellBlockWith(string(readme), readmeBuild[0])
	if block == "" {
		t.Fatalf("README.md has no sh block with %q", readmeBuild[0])
	}
	for _, line := range readmeBuild {
		if !strings.Contains(block, "\n"+line+"\n") {
			t.Errorf("README's build block lacks the line %q:\n%s", line, block)
		}
	}
	if !strings.Contains(string(readme), readmeServer) {
		t.Errorf("README.md does not start the server it built with %q", readmeServer)
	}

	// A clean checkout's layout: the sources where the README copies
	// them from, nothing built.
	root := t.TempDir()
	src := filepath.Join(root, "internal", "bench", "omniorb", "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(src, os.DirFS(filepath.Join("..", "..", "internal", "bench", "omniorb", "src"))); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, 3*time.Minute)
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", block)
	cmd.Dir = root
	// Debian's omniidl first, as the README's note says: omniORBpy's wheel
	// may put one for another omniORB on PATH.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(omniorb.Omniidl)+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's build commands failed: %v\n%s\n---\n%s", err, block, out)
	}

	port := iorPortOf(t, freeAddr(t))
	srv := proctest.Start(t, "quick-start prime_server", proctest.Options{},
		filepath.Join(root, "omniorb-prime", "prime_server"), "--port", strconv.Itoa(port))
	lines := srv.WaitOutput(ctx, t, srv.Stdout, iorLine)
	ior := lines[1]
	if first, _, _ := strings.Cut(srv.Stdout.String(), "\n"); first != ior {
		t.Errorf("first line of output %q, want the IOR", first)
	}
	if got := iorPort(t, ior); got != port {
		t.Errorf("the IOR names port %d, want %d (--port)", got, port)
	}
	o := needORBs(t)
	code, calls, sum := o.runClient(ctx, t, cxxClient, "--calls", "3", "--per-call", "--arg", "7919", ior)
	if code != 0 || sum.OK != 3 || len(calls) != 3 || calls[0].Result != true {
		t.Fatalf("calls to the quick start's server: exit %d, summary %+v, calls %+v; want 3 ok, is_prime(7919) true", code, sum, calls)
	}

	// The rest of the quick start: its group (on port 0), the server
	// behind "fulcrum agent giop --target <its IOR>", and an omniORB
	// client of the group's corbaloc, forwarded to the agent.
	group := readmeGIOPGroup(t, string(readme))
	r := &rig{orbs: o, bal: startBalancer(ctx, t, group)}
	r.servers = []*server{{Proc: srv, ior: ior, port: port}}
	a := r.startAgent(ctx, t, 0, r.servers[0])
	r.agents = []*agent{a}
	g := r.waitActive(ctx, t, 1, true)
	if g.Binding != "on-demand" || g.Strategy != "least-loaded" {
		t.Errorf("the quick start's group is %s/%s, want on-demand/least-loaded", g.Binding, g.Strategy)
	}
	code, calls, sum = o.runClient(ctx, t, cxxClient, "--calls", "5", "--per-call", "--arg", "7919", g.Reference.Corbaloc)
	if code != 0 || sum.OK != 5 || len(calls) != 5 {
		t.Fatalf("calls to %s: exit %d, summary %+v; want 5 ok", g.Reference.Corbaloc, code, sum)
	}
	t.Logf("built with the README's commands; %s printed its IOR for port %d; %d calls through %s served by the agent", srv.Name, port, len(calls), g.Reference.Corbaloc)
	for _, c := range calls[1:] {
		if c.Peer != a.endpoint() || c.Sends != 1 {
			t.Errorf("call %d went to %q in %d requests, want straight to the agent %s", c.Call, c.Peer, c.Sends, a.endpoint())
		}
	}
}

// readmeGIOPGroup returns the groups of the README's fulcrum-giop.yaml,
// as startBalancer takes them, with the front door moved to port 0 (the
// test reads the group's corbaloc from its status).
func readmeGIOPGroup(t *testing.T, readme string) string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "cat > fulcrum-giop.yaml <<'EOF'\n")
	if !ok {
		t.Fatal("README.md does not write fulcrum-giop.yaml")
	}
	body, _, ok := strings.Cut(after, "\nEOF\n")
	_, groups, ok2 := strings.Cut(body, "groups:\n")
	if !ok || !ok2 {
		t.Fatalf("README's fulcrum-giop.yaml has no groups:\n%s", body)
	}
	front := regexp.MustCompile(`(?m)^(\s+front_door:) \S+$`)
	if !front.MatchString(groups) {
		t.Fatalf("README's GIOP group has no front_door:\n%s", groups)
	}
	return front.ReplaceAllString(groups, "$1 127.0.0.1:0") + "\n"
}

// shellBlockWith returns the body of the first ```sh block of md that
// contains line, or "".
func shellBlockWith(md, line string) string {
	for rest := md; ; {
		_, after, ok := strings.Cut(rest, "```sh\n")
		if !ok {
			return ""
		}
		body, tail, ok := strings.Cut(after, "\n```")
		if !ok {
			return ""
		}
		if strings.Contains(body, line) {
			return body + "\n"
		}
		rest = tail
	}
}

// iorPortOf is the port of a host:port.
func iorPortOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, _ := strings.Cut(addr, ":")
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return n
}
