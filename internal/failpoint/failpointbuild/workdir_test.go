//go:build unix

package failpointbuild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWorkDirTakesTurns: the work directory of a checkout is the same path
// each time, empty when handed out, and a second claim waits for the first
// to be released (here: gives up when its context ends).
func TestWorkDirTakesTurns(t *testing.T) {
	t.Parallel()
	root := t.TempDir() // stands for a checkout: its own work directory
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, unlock, err := workDir(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "left-over"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if _, _, err := workDir(short, root); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second workDir while the first holds it = %v, want it to wait until its context ends", err)
	}

	unlock()
	dir2, unlock2, err := workDir(ctx, root)
	if err != nil {
		t.Fatalf("workDir after unlock: %v", err)
	}
	defer unlock2()
	defer os.RemoveAll(dir2)
	if dir2 != dir {
		t.Errorf("work directory %s, then %s: want the same path", dir, dir2)
	}
	if entries, err := os.ReadDir(dir2); err != nil || len(entries) != 0 {
		t.Errorf("work directory handed out with %v (%v), want it empty", entries, err)
	}
	os.Remove(dir2 + ".lock")
}
