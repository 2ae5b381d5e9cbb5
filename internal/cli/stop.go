package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// awaitStop blocks until ctx is done, SIGINT or SIGTERM arrives, or the
// server fails (serveErr). It returns the signal, if one came, and the
// server's error, if it failed.
func awaitStop(ctx context.Context, serveErr <-chan error) (os.Signal, error) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	select {
	case <-ctx.Done():
		return nil, nil
	case s := <-sigs:
		return s, nil
	case err := <-serveErr:
		return nil, err
	}
}
