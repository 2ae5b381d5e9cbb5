package clocktest

import (
	"sync"
	"testing"
	"time"
)

func TestManualMovesOnlyWhenTold(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := New(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now() = %v, want %v", got, t0)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		}()
	}
	wg.Wait()
	if got, want := c.Now(), t0.Add(800*time.Millisecond); !got.Equal(want) {
		t.Errorf("after 800 advances of 1ms: %v, want %v", got, want)
	}
	if got := c.Advance(time.Second); !got.Equal(t0.Add(1800 * time.Millisecond)) {
		t.Errorf("Advance returned %v", got)
	}
}
