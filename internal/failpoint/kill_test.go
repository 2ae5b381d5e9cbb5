//go:build unix

package failpoint_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/failpoint"
)

// killChildEnv makes the re-executed test binary the child that kills
// itself.
const killChildEnv = "FULCRUM_FAILPOINT_KILL_CHILD"

// TestKill re-executes the test binary as a child that calls Kill inside
// a function with a deferred print: the child dies of SIGKILL, having
// written what came before Kill and nothing of what came after, deferred
// code included.
func TestKill(t *testing.T) {
	if os.Getenv(killChildEnv) == "1" {
		killChild()
		return
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"=1")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child: %v, want death by SIGKILL; stdout %q", err, out)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL; stderr %s", ee, ee.Stderr)
	}
	if string(out) != "before Kill\n" {
		t.Errorf("child wrote %q, want only %q (no deferred code, nothing after Kill)", out, "before Kill\n")
	}
}

func killChild() {
	defer fmt.Println("deferred")
	fmt.Println("before Kill")
	failpoint.Kill()
	fmt.Println("after Kill")
}
