//go:build linux

package e2e

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fulcrumBin is the fulcrum binary built by TestMain.
var fulcrumBin string

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "fulcrum-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	fulcrumBin = filepath.Join(dir, "fulcrum")
	args := []string{"build", "-o", fulcrumBin}
	if os.Getenv("FULCRUM_E2E_RACE") == "1" {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/fulcrum")
	build := exec.Command("go", args...)
	build.Dir = ".." // the module root
	start := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go %s: %v\n%s", strings.Join(args, " "), err, out)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "e2e: built %s in %v\n", fulcrumBin, time.Since(start).Round(time.Millisecond))
	}

	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 && !goroutinesSettle(before) {
		fmt.Fprintf(os.Stderr, "e2e: goroutines leaked by the tests:\n%s\n", allStacks())
		return 1
	}
	return code
}

// goroutinesSettle reports whether the number of goroutines falls back to
// at most n within a few seconds (connections closing, processes' output
// copiers finishing).
func goroutinesSettle(n int) bool {
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > n {
		select {
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
	return true
}

func allStacks() []byte {
	buf := make([]byte, 1<<20)
	return buf[:runtime.Stack(buf, true)]
}
