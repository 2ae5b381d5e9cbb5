//go:build linux

package proctest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	r := newRecorder(t)
	calls := 0
	if !r.run(func() {
		Poll(ctx, r, "the third call", func() (bool, string) {
			calls++
			return calls == 3, fmt.Sprint(calls)
		})
	}) {
		t.Fatalf("Poll: %v", r.errors)
	}
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if r.run(func() {
		Poll(short, r, "never", func() (bool, string) { return false, "still not" })
	}) {
		t.Fatal("Poll returned for a condition never true")
	}
	if msg := strings.Join(r.errors, "\n"); msg != "waiting for never: context deadline exceeded; last: still not" {
		t.Errorf("message %q", msg)
	}
}
