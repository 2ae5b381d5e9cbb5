//go:build linux

package omniorb

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// TestReadmeQuickStartBuildsPrimeServer runs the README's build commands
// for the omniORB Prime server, exactly as written, in a copy of the
// checkout's layout (the sources from internal/bench/omniorb/src), then
// starts the server as the README does and checks that it prints its IOR
// first, for the port it was given, and serves calls. Without omniORB it
// skips, and fails with CI=true.
func TestReadmeQuickStartBuildsPrimeServer(t *testing.T) {
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
		t.Errorf("calls to the quick start's server: exit %d, summary %+v, calls %+v; want 3 ok, is_prime(7919) true", code, sum, calls)
	}
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
