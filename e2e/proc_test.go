//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
	"github.com/fulcrum-lb/fulcrum/internal/testbed"
)

// startProc starts the fulcrum binary with args (see proctest.Start for
// what is checked when the test ends).
func startProc(t *testing.T, name string, args ...string) *proctest.Proc {
	t.Helper()
	return proctest.Start(t, name, proctest.Options{}, fulcrumBin, args...)
}

// run runs the fulcrum binary to completion and returns its exit code,
// stdout and stderr.
func run(ctx context.Context, t *testing.T, name string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startProc(t, name, args...)
	code = p.Exit(ctx, t)
	return code, p.Stdout.String(), p.Stderr.String()
}

// needTestbed fails the test when the testbed (root, ip, tc, nsenter,
// cgroups) cannot run here and CI=true, and skips it otherwise.
func needTestbed(t *testing.T) {
	t.Helper()
	if err := testbed.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the testbed is required (CI=true): %v", err)
		}
		t.Skipf("no testbed here: %v", err)
	}
}

// needTool returns the path of an external tool. A missing tool fails the
// test when CI=true and skips it otherwise.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required (CI=true) but not installed: %v; scripts/test.sh installs it", name, err)
	}
	t.Skipf("%s is not installed (%v); scripts/test.sh installs it", name, err)
	return ""
}

// runTool runs an external tool and returns its stdout; a non-zero exit
// fails the test.
func runTool(ctx context.Context, t *testing.T, path string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(path), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// writeConfig writes a config file from a format string and returns its
// path.
func writeConfig(t *testing.T, format string, args ...any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fulcrum.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(format, args...)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testContext returns a context ending after d or when the test ends.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
