package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
)

func newBackendEchoCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "echo --listen ADDR",
		Short: "Serve TCP echo: every byte sent comes back (the replicas of bench tcp)",
		Long: `Serve a plain TCP echo service: every byte a client sends comes back on the
same connection, in order, whatever the bytes are (no framing). It is the
replica of "fulcrum bench tcp" and a test target for tcp groups.

It is half-close aware: when a client closes its sending side (shutdown
SHUT_WR), the echo writes back what it has read, then closes its own sending
side, so the client reads everything and then end of file. Idle connections
hold no buffer (a 64 KiB buffer is borrowed only while bytes are in hand), so
it holds tens of thousands of connections, as many as its descriptor limit
allows (raised to the hard limit at start).

Its first line on stdout is "listening on HOST:PORT". SIGTERM or SIGINT stops
accepting and waits up to 5 s for open connections to end, then closes them.`,
		Example: `  fulcrum backend echo --listen 127.0.0.1:7001`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEcho(cmd.Context(), listen, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7001", "address to listen on (port 0: any free port)")
	return cmd
}

func runEcho(ctx context.Context, listen string, stdout interface{ Write([]byte) (int, error) }) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return exitCode(2, fmt.Errorf("--listen: invalid value %q, must be host:port such as 127.0.0.1:7001: %w", listen, err))
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := backend.NewEcho(log)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	err = awaitStop(ctx, stdout, ln.Addr().String(), nil, log, serveErr, func(ctx context.Context) error {
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil // connections still open after the grace period were closed
	})
	if errors.Is(err, backend.ErrEchoClosed) {
		err = nil
	}
	return err
}
