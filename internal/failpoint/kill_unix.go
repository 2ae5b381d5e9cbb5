//go:build unix

package failpoint

import (
	"fmt"
	"os"
	"syscall"
)

// kill sends SIGKILL to the process itself. On Linux the process is gone
// before the system call returns to this thread; the exit below only runs
// when sending failed (still without deferred code).
func kill() {
	err := syscall.Kill(os.Getpid(), syscall.SIGKILL)
	if err == nil {
		select {} // elsewhere than Linux: until the signal lands
	}
	fmt.Fprintf(os.Stderr, "failpoint: SIGKILL to self: %v; exiting with status 137\n", err)
	os.Exit(137)
}
