//go:build unix

package failpointbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockPoll is how often workDir tries the lock while another build holds
// it.
const lockPoll = 50 * time.Millisecond

// workDir returns the directory to copy the checkout at root into, empty,
// and the function that releases it. The directory's path is the same on
// every build of one checkout (a temporary directory named after a hash of
// root): the go command's build cache keys a package on its directory, so
// a copy at a new path each time would compile every package of the module
// again. An exclusive lock (flock on a file beside it) makes concurrent
// builds of the checkout take turns; waiting ends with ctx.
func workDir(ctx context.Context, root string) (string, func(), error) {
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "fulcrum-failpoint-"+hex.EncodeToString(sum[:6]))
	f, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("failpointbuild: %w", err)
	}
	if err := lock(ctx, f); err != nil {
		f.Close()
		return "", nil, err
	}
	unlock := func() { f.Close() } // closing the file releases the lock
	// A build that was killed may have left its copy: start empty.
	if err := os.RemoveAll(dir); err != nil {
		unlock()
		return "", nil, fmt.Errorf("failpointbuild: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		unlock()
		return "", nil, fmt.Errorf("failpointbuild: %w", err)
	}
	return dir, unlock, nil
}

// lock takes an exclusive flock on f, trying every lockPoll until ctx
// ends.
func lock(ctx context.Context, f *os.File) error {
	var tick *time.Ticker
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("failpointbuild: locking %s: %w", f.Name(), err)
		}
		if tick == nil {
			tick = time.NewTicker(lockPoll)
			defer tick.Stop()
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("failpointbuild: waiting for another build of this checkout (lock %s): %w", f.Name(), ctx.Err())
		}
	}
}
