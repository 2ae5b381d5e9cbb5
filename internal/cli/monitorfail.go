package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/monitor"
)

// retryForeverUsage is the help of --retry-forever, shared by the backend
// and the agents.
const retryForeverUsage = "keep retrying a registration the balancer refuses (401: no or a wrong join token; 403: address blocked) instead of exiting 1 after 5 tries"

// addRetryForever adds --retry-forever to cmd.
func addRetryForever(cmd *cobra.Command, v *bool) {
	cmd.Flags().BoolVar(v, "retry-forever", false, retryForeverUsage)
}

// registerAttempts is monitor.Options.RegisterAttempts for --retry-forever.
func registerAttempts(forever bool) int {
	if forever {
		return -1
	}
	return monitor.DefaultRegisterAttempts
}

// untilMonitorFails returns a context that also ends when mon (when not
// nil) gives up registering, so that a replica the balancer refuses stops
// instead of serving unregistered.
func untilMonitorFails(ctx context.Context, mon *monitor.Monitor) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if mon == nil {
		return ctx, cancel
	}
	go func() {
		select {
		case <-mon.Failed():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// monitorErr is runErr, or when there is none and mon gave up, the
// monitor's error with exit status 1.
func monitorErr(runErr error, mon *monitor.Monitor) error {
	if runErr != nil || mon == nil {
		return runErr
	}
	if err := mon.Err(); err != nil {
		return exitCode(1, err)
	}
	return nil
}
