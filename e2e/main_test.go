//go:build linux

package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fulcrum-lb/fulcrum/internal/failpoint/failpointtest"
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

	// Through failpointtest.Run: the fault-injection tests take the
	// failpoint binary from failpointtest.Binary, which Run removes.
	code := failpointtest.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: goroutines leaked by the tests: %v\n", err)
			return 1
		}
	}
	return code
}
