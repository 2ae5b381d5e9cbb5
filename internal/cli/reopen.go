package cli

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// reopenOnSIGUSR1 calls reopen each time SIGUSR1 arrives, for logrotate's
// postrotate: reopen reopens the access log file at its path and says
// which (ok false: the access log is not a file, off or "-"; the signal is
// then logged and otherwise ignored). SIGUSR1 never stops the balancer.
// Signals are caught from the call on; stop ends catching them and returns
// once the watcher has stopped.
func reopenOnSIGUSR1(reopen func() (path string, ok bool, err error), log *slog.Logger) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-sigs:
				path, ok, err := reopen()
				switch {
				case !ok:
					log.Info("SIGUSR1: no access log file to reopen")
				case err != nil:
					log.Error("access log not reopened; writing on to the file already open", "path", path, "error", err)
				default:
					log.Info("access log reopened", "path", path)
				}
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		<-exited
	}
}
