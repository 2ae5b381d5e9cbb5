package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// boundedContext bounds a test's waits.
func boundedContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// steps subscribes to a group's events for the test's life.
func (e *env) steps(group string) <-chan balancer.Event {
	e.t.Helper()
	ch, cancel, err := e.b.Subscribe(group)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cancel)
	return ch
}

// nextStep waits for the group's next analyzer step, or fails when ctx is
// done.
func nextStep(ctx context.Context, t *testing.T, events <-chan balancer.Event) {
	t.Helper()
	for {
		select {
		case <-ctx.Done():
			t.Fatal("timed out waiting for an analyzer step")
		case ev, ok := <-events:
			if !ok {
				t.Fatal("event channel closed")
			}
			if ev.Type == "step" {
				return
			}
		}
	}
}
