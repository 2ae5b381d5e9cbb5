// Package failpointtest gives tests fulcrum's failpoint binary (package
// failpointbuild), built at most once per test process, on first use:
//
//	func TestMain(m *testing.M) { os.Exit(failpointtest.Run(m)) }
//
//	func TestCrash(t *testing.T) {
//		bin := failpointtest.Binary(t)
//		p := proctest.Start(t, "counter", proctest.Options{
//			Env: []string{failpoint.Env(map[string]string{"counterHTTPBeforeReply": failpoint.Always})},
//		}, bin, "backend", "counter", "--listen", "127.0.0.1:0")
//		...
//	}
//
// A failed build fails the test that asked for the binary, and every
// later one in the process (never a skip, in CI or not).
package failpointtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/failpoint/failpointbuild"
)

// BuildTimeout bounds the build (the first one on a machine compiles the
// module's packages; later ones find most of it in the build cache).
const BuildTimeout = 5 * time.Minute

var (
	mu      sync.Mutex
	running bool   // Run is running the tests
	dir     string // the binary's directory, removed by Run
	built   bool
	path    string
	took    time.Duration
	err     error
)

// Run runs m's tests and then removes the failpoint binary, if one was
// built. TestMain of a package whose tests call Binary returns through it.
func Run(m *testing.M) int {
	mu.Lock()
	running = true
	mu.Unlock()
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	running = false
	if dir != "" {
		if rerr := os.RemoveAll(dir); rerr != nil {
			fmt.Fprintf(os.Stderr, "failpointtest: %v\n", rerr)
		}
	}
	return code
}

// Binary returns the path of the failpoint binary of the module the test
// runs in, building it on the process's first call (callers wait for it).
// It fails t when the build failed, with the go command's output, or when
// TestMain does not go through Run.
func Binary(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if !running {
		t.Fatal("failpointtest: Binary needs the package's TestMain to return through failpointtest.Run")
	}
	if !built {
		built = true
		start := time.Now()
		path, err = build()
		took = time.Since(start)
	}
	if err != nil {
		t.Fatalf("failpointtest: building the failpoint binary: %v", err)
	}
	t.Logf("failpointtest: failpoint binary %s (built in %v)", path, took.Round(time.Millisecond))
	return path
}

// build builds the binary into a new temporary directory. Caller must
// hold mu.
func build() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), BuildTimeout)
	defer cancel()
	gomod, gerr := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if gerr != nil {
		return "", fmt.Errorf("go env GOMOD: %w", gerr)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a module (go env GOMOD is empty)")
	}
	d, derr := os.MkdirTemp("", "fulcrum-failpoint-bin-")
	if derr != nil {
		return "", derr
	}
	dir = d
	p := filepath.Join(d, "fulcrum-failpoint")
	if berr := failpointbuild.Build(ctx, filepath.Dir(mod), p); berr != nil {
		return "", berr
	}
	return p, nil
}
