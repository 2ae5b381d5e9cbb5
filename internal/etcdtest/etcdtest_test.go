package etcdtest

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestThreeMembers: a three-member cluster is healthy, stays healthy with
// one member killed, and the member rejoins after a restart; a paused
// member answers no health call until it is resumed.
func TestThreeMembers(t *testing.T) {
	c := New(t, Options{Members: 3})
	if eps := c.Endpoints(); len(eps) != 3 || eps[0] == eps[1] || eps[1] == eps[2] {
		t.Fatalf("endpoints %v, want three distinct", eps)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	c.Member(0).Kill()
	if c.Member(0).Running() {
		t.Fatal("a killed member is still running")
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("two of three members: %v", err)
	}
	if err := c.Member(0).Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if err := c.Member(1).Pause(); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	err := c.Member(1).WaitHealthy(short)
	cancelShort()
	if err == nil {
		t.Fatal("a paused member answered its health call")
	}
	if err := c.Member(1).Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("after resuming: %v", err)
	}
	c.Member(2).Stop()
	if err := c.Member(2).WaitHealthy(ctx); err == nil {
		t.Fatal("a stopped member is healthy")
	}
}
