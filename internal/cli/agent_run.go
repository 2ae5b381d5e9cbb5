package cli

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/monitor"
)

// agentStart is how the HTTP and replicated agents begin: ctx
// (Background when nil), a logger on stderr at info level, and the admin
// API's client (nil for the default; exit code 2 when the TLS flags are
// wrong).
func agentStart(ctx context.Context, adminTLS *adminTLSFlags) (context.Context, *slog.Logger, *http.Client, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	adminHC, err := adminTLS.client(10 * time.Second)
	if err != nil {
		return nil, nil, nil, exitCode(2, err)
	}
	return ctx, log, adminHC, nil
}

// agentURL is the URL an agent listening on ln is reached at: advertise
// (--advertise), or http:// and ln's address; without a trailing "/".
func agentURL(advertise string, ln net.Listener) string {
	u := advertise
	if u == "" {
		u = "http://" + ln.Addr().String()
	}
	return strings.TrimRight(u, "/")
}

// agentLeave ends an agent: it deregisters the replica and shuts srv (nil:
// none) down, within 5 seconds. It returns runErr, or srv's shutdown error
// when runErr is nil.
func agentLeave(log *slog.Logger, mon *monitor.Monitor, srv *http.Server, runErr error) error {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := mon.Close(sctx); err != nil {
		log.Warn("deregistering failed", "err", err)
	}
	if srv != nil {
		if err := srv.Shutdown(sctx); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}
