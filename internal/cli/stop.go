package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals catches SIGINT and SIGTERM for a long-running command from
// the moment it is made: a signal that arrives while the command is still
// starting (after it printed that it is ready, say, but before it waits)
// is kept for await instead of killing the process.
type stopSignals struct{ sigs chan os.Signal }

// catchStop starts catching SIGINT and SIGTERM. Call release when the
// command no longer waits for them.
func catchStop() *stopSignals {
	s := &stopSignals{sigs: make(chan os.Signal, 1)}
	signal.Notify(s.sigs, syscall.SIGINT, syscall.SIGTERM)
	return s
}

// release stops catching the signals.
func (s *stopSignals) release() { signal.Stop(s.sigs) }

// await blocks until ctx is done, SIGINT or SIGTERM arrives (or arrived
// since catchStop), or the server fails (serveErr). It returns the signal,
// if one came, and the server's error, if it failed.
func (s *stopSignals) await(ctx context.Context, serveErr <-chan error) (os.Signal, error) {
	select {
	case <-ctx.Done():
		return nil, nil
	case sig := <-s.sigs:
		return sig, nil
	case err := <-serveErr:
		return nil, err
	}
}

// awaitOrReload is await that also returns when a signal arrives on
// reload (SIGHUP), returning it.
func (s *stopSignals) awaitOrReload(ctx context.Context, serveErr <-chan error, reload <-chan os.Signal) (os.Signal, error) {
	select {
	case <-ctx.Done():
		return nil, nil
	case sig := <-s.sigs:
		return sig, nil
	case err := <-serveErr:
		return nil, err
	case sig := <-reload:
		return sig, nil
	}
}
