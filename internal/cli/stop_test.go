package cli

import (
	"context"
	"os"
	"syscall"
	"testing"
)

// TestStopSignalBeforeAwait: a SIGTERM that arrives after catchStop but
// before await (a command that has printed it is ready and is still
// starting) is kept for await, not fatal to the process.
func TestStopSignalBeforeAwait(t *testing.T) {
	stop := catchStop()
	defer stop.release()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sig, err := stop.await(context.Background(), make(chan error))
	if sig != syscall.SIGTERM || err != nil {
		t.Fatalf("await = %v, %v; want SIGTERM, no error", sig, err)
	}
}
