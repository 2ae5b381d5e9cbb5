package compaction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/clock"
)

// loop runs a step on its own goroutine every period of a clock, the
// first a period after start, until close: the background of the
// Publisher and the Runner.
type loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startLoop starts calling step every period (> 0) of clk; step's context
// ends at close.
func startLoop(clk clock.Clock, period time.Duration, step func(ctx context.Context)) *loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := clk.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
			}
			step(ctx)
		}
	}()
	return l
}

// close stops the loop and waits for a step under way.
func (l *loop) close() {
	l.cancel()
	<-l.done
}

// checkEtcd checks what the Publisher's and the Runner's options both
// need: an etcd client, and the deployment's prefix.
func checkEtcd(c *clientv3.Client, prefix string) error {
	switch {
	case c == nil:
		return errors.New("compaction: client: none given, want an etcd client")
	case !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/"):
		return fmt.Errorf("compaction: prefix %q: must start and end with /", prefix)
	}
	return nil
}
