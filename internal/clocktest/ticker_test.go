package clocktest

import (
	"testing"
	"time"
)

// ticked reports whether t has a tick waiting, and takes it.
func ticked(t interface{ C() <-chan time.Time }) bool {
	select {
	case <-t.C():
		return true
	default:
		return false
	}
}

func TestTickerFollowsAdvance(t *testing.T) {
	t.Parallel()
	c := New(time.Unix(100, 0))
	tk := c.NewTicker(10 * time.Millisecond)
	c.Advance(9 * time.Millisecond)
	if ticked(tk) {
		t.Fatal("ticked before its period")
	}
	c.Advance(time.Millisecond)
	if !ticked(tk) {
		t.Fatal("no tick at its period")
	}
	// Crossing three periods at once gives one tick (a slow reader), and
	// the next comes at the next multiple.
	c.Advance(35 * time.Millisecond) // 45ms
	if !ticked(tk) || ticked(tk) {
		t.Fatal("want exactly one tick after crossing three periods")
	}
	c.Advance(4 * time.Millisecond) // 49ms
	if ticked(tk) {
		t.Fatal("ticked before 50ms")
	}
	c.Advance(time.Millisecond)
	if !ticked(tk) {
		t.Fatal("no tick at 50ms")
	}

	// Reset drops a tick not yet received and restarts the period.
	c.Advance(10 * time.Millisecond) // a tick waits
	tk.Reset(20 * time.Millisecond)
	if ticked(tk) {
		t.Fatal("a tick due before Reset was received after it")
	}
	c.Advance(19 * time.Millisecond)
	if ticked(tk) {
		t.Fatal("ticked before the new period")
	}
	c.Advance(time.Millisecond)
	if !ticked(tk) {
		t.Fatal("no tick at the new period")
	}

	tk.Stop()
	c.Advance(time.Hour)
	if ticked(tk) {
		t.Fatal("ticked after Stop")
	}
}
