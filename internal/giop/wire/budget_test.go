package wire_test

import (
	"errors"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// A Budget grants within its bound, makes the rest wait until memory is
// given back, gives up at a deadline or on cancel, and always grants when
// nothing is held.
func TestBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := wire.NewBudget(100)
		if err := b.Acquire("a", 60, time.Time{}, nil); err != nil {
			t.Fatal(err)
		}
		b.Take(1) // "c" has the overdraft from here on
		if err := b.Acquire("c", 40, time.Time{}, nil); err != nil {
			t.Fatalf("the first reader past the bound: %v, want the overdraft", err)
		}
		granted := make(chan error, 1)
		go func() { granted <- b.Acquire("b", 50, time.Time{}, nil) }()
		synctest.Wait()
		if st, _ := b.Stats(); st.Waiting != 1 || st.Held != 101 {
			t.Fatalf("over the bound with the overdraft taken: %+v, want one waiting and 101 held", st)
		}
		b.Release(41)
		b.Done("c")
		b.Release(60)
		if err := <-granted; err != nil {
			t.Fatal(err)
		}
		b.Done("b")
		if st, _ := b.Stats(); st.Waiting != 0 || st.Held != 50 || st.Peak != 101 {
			t.Fatalf("after release: %+v, want 50 held, peak 101", st)
		}

		if err := b.Acquire("d", 60, time.Time{}, nil); err != nil {
			t.Fatalf("past the bound with no overdraft taken: %v, want it granted", err)
		}
		start := time.Now()
		err := b.Acquire("e", 60, start.Add(time.Second), nil)
		if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("Acquire past the bound with a deadline = %v after %v, want a deadline error after 1s", err, time.Since(start))
		}
		cancel := make(chan struct{})
		go func() { granted <- b.Acquire("e", 60, time.Time{}, cancel) }()
		synctest.Wait()
		close(cancel)
		if err := <-granted; !errors.Is(err, wire.ErrCancelled) {
			t.Errorf("cancelled Acquire = %v, want ErrCancelled", err)
		}
		if st, _ := b.Stats(); st.Held != 110 || st.Waiting != 0 {
			t.Errorf("failed waits took memory: %+v", st)
		}

		b.Release(110)
		b.Done("d")
		if err := b.Acquire("f", 1000, time.Time{}, nil); err != nil {
			t.Errorf("a message above the bound with nothing held: %v, want granted", err)
		}
		b.SetMax(2000)
		if err := b.Acquire("g", 500, time.Time{}, nil); err != nil {
			t.Errorf("after SetMax(2000): %v", err)
		}
		b.Release(1500)
		if st, _ := b.Stats(); st.Held != 0 {
			t.Errorf("held %d after giving everything back", st.Held)
		}
	})
}
