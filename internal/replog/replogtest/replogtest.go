package replogtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// Harness is what the suite needs of an engine.
type Harness struct {
	// Open returns the empty log of a new group with the given limits
	// (zero: the defaults) and closes it at t's cleanup.
	Open func(t *testing.T, lim replog.Limits) replog.Log
	// Reopen closes l and everything under it (the file, the client) and
	// opens the same group again, with the same limits.
	Reopen func(t *testing.T, l replog.Log) replog.Log
	// Expire returns once session's dedup keys in l have expired (bbolt:
	// the clock moved past the session TTL; etcd: the session's lease
	// seen lapsing).
	Expire func(t *testing.T, l replog.Log, session string)
	// Garbage stores an entry that cannot be decoded after the last one
	// and returns its position.
	Garbage func(t *testing.T, l replog.Log) uint64
	// Sparse says that positions may skip numbers (etcd's revisions);
	// otherwise they must be 1, 2, 3, ...
	Sparse bool
}

// timeout bounds every wait of the suite.
const timeout = 20 * time.Second

// Run runs the suite, each test on its own log, in parallel.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"Order", testOrder},
		{"DedupConcurrentSameSeq", testDedupConcurrent},
		{"ConcurrentDistinctSeqs", testConcurrentDistinct},
		{"WatchFromMiddle", testWatchFromMiddle},
		{"TrimAndWatchBelow", testTrim},
		{"TrimPassesAWatch", testTrimPassesWatch},
		{"PayloadLimit", testPayloadLimit},
		{"LogBytesLimit", testLogBytesLimit},
		{"SessionExpiry", testSessionExpiry},
		{"Reopen", testReopen},
		{"Undecodable", testUndecodable},
		{"WatchEnds", testWatchEnds},
		{"BadSession", testBadSession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, h)
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

func app(session string, seq uint64, payload string) replog.Append {
	return replog.Append{Session: session, Seq: seq, Payload: []byte(payload), Origin: "inst-" + session}
}

// mustAppend appends a as a new entry and returns its position.
func mustAppend(t *testing.T, l replog.Log, a replog.Append) uint64 {
	t.Helper()
	pos, existed, err := l.AppendOrGet(ctxT(t), a)
	if err != nil {
		t.Fatalf("AppendOrGet(%s/%d): %v", a.Session, a.Seq, err)
	}
	if existed {
		t.Fatalf("AppendOrGet(%s/%d): existed, want a new entry", a.Session, a.Seq)
	}
	return pos
}

// collect watches l from from and returns the first n entries; it fails
// on any error before them.
func collect(t *testing.T, l replog.Log, from uint64, n int) []replog.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []replog.Entry
	if n == 0 {
		return nil
	}
	for e, err := range l.Watch(ctx, from) {
		if err != nil {
			t.Fatalf("Watch(%d) after %d of %d entries: %v", from, len(out), n, err)
		}
		out = append(out, e)
		if len(out) == n {
			break
		}
	}
	return out
}

// firstError watches l from from and returns the error it ends with,
// with the entries before it; it fails if more than max entries come
// first.
func firstError(t *testing.T, l replog.Log, from uint64, max int) ([]replog.Entry, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []replog.Entry
	for e, err := range l.Watch(ctx, from) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
		if len(out) > max {
			t.Fatalf("Watch(%d): %d entries, want an error after at most %d", from, len(out), max)
		}
	}
	t.Fatalf("Watch(%d) ended without an error", from)
	return nil, nil
}

func checkPositions(t *testing.T, h Harness, pos []uint64) {
	t.Helper()
	for i := 1; i < len(pos); i++ {
		if pos[i] <= pos[i-1] || (!h.Sparse && pos[i] != pos[i-1]+1) {
			t.Fatalf("positions %v: want increasing%s", pos, map[bool]string{false: " by one", true: ""}[h.Sparse])
		}
	}
	if !h.Sparse && len(pos) > 0 && pos[0] != 1 {
		t.Fatalf("first position %d, want 1", pos[0])
	}
}

func testOrder(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	var pos []uint64
	for i := range 20 {
		pos = append(pos, mustAppend(t, l, app(fmt.Sprint("s", i%3), uint64(i), fmt.Sprint("payload-", i))))
	}
	checkPositions(t, h, pos)
	got := collect(t, l, 0, 20)
	for i, e := range got {
		want := app(fmt.Sprint("s", i%3), uint64(i), fmt.Sprint("payload-", i))
		if e.Position != pos[i] || e.Session != want.Session || e.Seq != want.Seq || e.Origin != want.Origin || string(e.Payload) != string(want.Payload) {
			t.Errorf("entry %d = %+v, want position %d and %+v", i, e, pos[i], want)
		}
		if e.Appended.IsZero() || (i > 0 && e.Appended.Before(got[i-1].Appended)) {
			t.Errorf("entry %d appended at %v (the one before at %v), want a time, not before the one before", i, e.Appended, got[max(i-1, 0)].Appended)
		}
	}
}

func testDedupConcurrent(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	const n = 16
	var wg sync.WaitGroup
	pos := make([]uint64, n)
	existed := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			pos[i], existed[i], errs[i] = l.AppendOrGet(ctxT(t), app("dup", 42, fmt.Sprint("copy-", i)))
		})
	}
	wg.Wait()
	news := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("append %d: %v", i, errs[i])
		}
		if !existed[i] {
			news++
		}
		if pos[i] != pos[0] {
			t.Fatalf("positions %v: want one for every copy", pos)
		}
	}
	if news != 1 {
		t.Fatalf("%d appends were new, want exactly 1", news)
	}
	marker := mustAppend(t, l, app("dup", 43, "marker"))
	got := collect(t, l, 0, 2)
	if got[0].Position != pos[0] || got[0].Seq != 42 || got[1].Position != marker {
		t.Fatalf("watch: %+v, want the one entry at %d then the marker at %d", got, pos[0], marker)
	}
}

func testConcurrentDistinct(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	const clients, each = 8, 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	byPos := map[uint64]string{}
	// A watcher started before the appends sees them live.
	live := make(chan []replog.Entry, 1)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		var out []replog.Entry
		for e, err := range l.Watch(ctx, 0) {
			if err != nil {
				break
			}
			out = append(out, e)
			if len(out) == clients*each {
				break
			}
		}
		live <- out
	}()
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				a := app(fmt.Sprint("c", c), uint64(i), fmt.Sprintf("c%d-%d", c, i))
				p, existed, err := l.AppendOrGet(ctxT(t), a)
				if err != nil || existed {
					t.Errorf("append c%d/%d: existed=%v err=%v", c, i, existed, err)
					return
				}
				mu.Lock()
				if prev, ok := byPos[p]; ok {
					t.Errorf("position %d given to %s and %s", p, prev, a.Payload)
				}
				byPos[p] = string(a.Payload)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	check := func(name string, got []replog.Entry) {
		if len(got) != clients*each {
			t.Fatalf("%s watch: %d entries, want %d", name, len(got), clients*each)
		}
		var pos []uint64
		for _, e := range got {
			if byPos[e.Position] != string(e.Payload) {
				t.Fatalf("%s watch: entry at %d is %q, its append got %q", name, e.Position, e.Payload, byPos[e.Position])
			}
			pos = append(pos, e.Position)
		}
		checkPositions(t, h, pos)
	}
	check("a later", collect(t, l, 0, clients*each))
	select {
	case got := <-live:
		check("the live", got)
	case <-ctx.Done():
		t.Fatal("the live watch did not deliver every entry")
	}
}

func testWatchFromMiddle(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	var pos []uint64
	for i := range 10 {
		pos = append(pos, mustAppend(t, l, app("m", uint64(i), fmt.Sprint(i))))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []replog.Entry
	for e, err := range l.Watch(ctx, pos[5]) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
		if len(got) == 5 { // caught up: the next comes live
			pos = append(pos, mustAppend(t, l, app("m", 10, "10")))
		}
		if len(got) == 6 {
			break
		}
	}
	for i, e := range got {
		if e.Position != pos[5+i] || e.Seq != uint64(5+i) {
			t.Fatalf("entry %d: %+v, want seq %d at %d", i, e, 5+i, pos[5+i])
		}
	}
}

func testTrim(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	var pos []uint64
	for i := range 10 {
		pos = append(pos, mustAppend(t, l, app("t", uint64(i), fmt.Sprint(i))))
	}
	if err := l.Trim(ctxT(t), pos[4]); err != nil {
		t.Fatalf("Trim(%d): %v", pos[4], err)
	}
	for _, from := range []uint64{0, pos[2], pos[4]} {
		_, err := firstError(t, l, from, 0)
		var te *replog.TrimmedError
		if !errors.As(err, &te) || !errors.Is(err, replog.ErrTrimmed) || te.TrimmedTo != pos[4] || te.From > pos[4] {
			t.Fatalf("Watch(%d): %v, want a TrimmedError up to %d", from, err, pos[4])
		}
	}
	if got := collect(t, l, pos[5], 5); got[0].Position != pos[5] || got[4].Position != pos[9] {
		t.Fatalf("Watch(%d) after the trim: %+v", pos[5], got)
	}
	if err := l.Trim(ctxT(t), pos[1]); err != nil {
		t.Fatalf("Trim below the trim point: %v", err)
	}
	if _, err := firstError(t, l, pos[3], 0); !errors.Is(err, replog.ErrTrimmed) {
		t.Fatalf("a trim below the trim point moved it back: Watch(%d): %v", pos[3], err)
	}
	// The dedup index outlives the trimmed entry.
	if p, existed, err := l.AppendOrGet(ctxT(t), app("t", 1, "again")); err != nil || !existed || p != pos[1] {
		t.Fatalf("append of a trimmed entry again: %d %v %v, want %d existed", p, existed, err, pos[1])
	}
}

// testTrimPassesWatch: a trim past a running watch's position makes it
// end with ErrTrimmed or deliver what it had read already, never skip.
func testTrimPassesWatch(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	var pos []uint64
	for i := range 10 {
		pos = append(pos, mustAppend(t, l, app("tw", uint64(i), fmt.Sprint(i))))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []uint64
	for e, err := range l.Watch(ctx, 0) {
		if err != nil {
			if !errors.Is(err, replog.ErrTrimmed) {
				t.Fatalf("after %v: %v, want entries or ErrTrimmed", got, err)
			}
			break
		}
		got = append(got, e.Position)
		if len(got) == 2 {
			if err := l.Trim(ctxT(t), pos[5]); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) == 10 {
			break
		}
	}
	for i, p := range got {
		if p != pos[i] {
			t.Fatalf("watch across a trim: %v, want a prefix of %v", got, pos)
		}
	}
}

func testPayloadLimit(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{MaxPayload: 100, MaxLogBytes: 100_000})
	_, _, err := l.AppendOrGet(ctxT(t), app("p", 1, string(bytes.Repeat([]byte("x"), 101))))
	var pe *replog.PayloadTooLargeError
	if !errors.As(err, &pe) || !errors.Is(err, replog.ErrPayloadTooLarge) || pe.Size != 101 || pe.Max != 100 {
		t.Fatalf("101 bytes: %v, want a PayloadTooLargeError of 101 > 100", err)
	}
	p := mustAppend(t, l, app("p", 1, string(bytes.Repeat([]byte("x"), 100))))
	if got := collect(t, l, 0, 1); got[0].Position != p || len(got[0].Payload) != 100 {
		t.Fatalf("the refused payload reached the log: first entry %+v", got[0])
	}
}

func testLogBytesLimit(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{MaxPayload: 100, MaxLogBytes: 1000})
	payload := string(bytes.Repeat([]byte("y"), 100))
	var pos []uint64
	var full error
	for i := range 12 {
		p, _, err := l.AppendOrGet(ctxT(t), app("f", uint64(i), payload))
		if err != nil {
			full = err
			break
		}
		pos = append(pos, p)
	}
	var le *replog.LogFullError
	if !errors.As(full, &le) || !errors.Is(full, replog.ErrLogFull) || le.Max != 1000 {
		t.Fatalf("after %d appends of 100 bytes: %v, want a LogFullError (max 1000)", len(pos), full)
	}
	if len(pos) < 5 || len(pos) > 9 {
		t.Fatalf("%d appends of 100 bytes fit in 1000 bytes, want 5 to 9", len(pos))
	}
	if p, existed, err := l.AppendOrGet(ctxT(t), app("f", 0, payload)); err != nil || !existed || p != pos[0] {
		t.Fatalf("a duplicate while full: %d %v %v, want %d existed", p, existed, err, pos[0])
	}
	if err := l.Trim(ctxT(t), pos[2]); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mustAppend(t, l, app("g", uint64(i), payload))
	}
}

func testSessionExpiry(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	p1 := mustAppend(t, l, app("e", 1, "first"))
	if p, existed, err := l.AppendOrGet(ctxT(t), app("e", 1, "retry")); err != nil || !existed || p != p1 {
		t.Fatalf("retry: %d %v %v, want %d existed", p, existed, err, p1)
	}
	h.Expire(t, l, "e")
	p2 := mustAppend(t, l, app("e", 1, "after expiry"))
	if p2 <= p1 {
		t.Fatalf("after expiry: position %d, want above %d", p2, p1)
	}
	if p, existed, err := l.AppendOrGet(ctxT(t), app("e", 1, "retry")); err != nil || !existed || p != p2 {
		t.Fatalf("retry after the new append: %d %v %v, want %d existed", p, existed, err, p2)
	}
	got := collect(t, l, 0, 2)
	if string(got[0].Payload) != "first" || string(got[1].Payload) != "after expiry" {
		t.Fatalf("entries %+v", got)
	}
}

func testReopen(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	var pos []uint64
	for i := range 5 {
		pos = append(pos, mustAppend(t, l, app("r", uint64(i), fmt.Sprint(i))))
	}
	l = h.Reopen(t, l)
	for i := range 5 {
		if p, existed, err := l.AppendOrGet(ctxT(t), app("r", uint64(i), "again")); err != nil || !existed || p != pos[i] {
			t.Fatalf("after reopening, r/%d: %d %v %v, want %d existed", i, p, existed, err, pos[i])
		}
	}
	got := collect(t, l, 0, 5)
	for i, e := range got {
		if e.Position != pos[i] || string(e.Payload) != fmt.Sprint(i) {
			t.Fatalf("after reopening, entry %d: %+v", i, e)
		}
	}
	if p := mustAppend(t, l, app("r", 5, "5")); p <= pos[4] {
		t.Fatalf("after reopening, a new entry at %d, want above %d", p, pos[4])
	}
}

func testUndecodable(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	mustAppend(t, l, app("u", 1, "a"))
	mustAppend(t, l, app("u", 2, "b"))
	bad := h.Garbage(t, l)
	mustAppend(t, l, app("u", 3, "c"))
	got, err := firstError(t, l, 0, 2)
	var de *replog.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, replog.ErrUndecodable) || de.Position != bad {
		t.Fatalf("watch: %v, want a DecodeError at %d", err, bad)
	}
	if len(got) != 2 {
		t.Fatalf("%d entries before the error, want 2", len(got))
	}
}

func testWatchEnds(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		for _, err := range l.Watch(ctx, 0) {
			done <- err
			return
		}
		done <- errors.New("ended without an error")
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled watch: %v, want context.Canceled", err)
		}
	case <-time.After(timeout):
		t.Fatal("a cancelled watch did not end")
	}
	go func() {
		for _, err := range l.Watch(context.Background(), 0) {
			done <- err
			return
		}
		done <- errors.New("ended without an error")
	}()
	mustAppend(t, l, app("w", 1, "x"))
	if err := <-done; err != nil {
		t.Fatalf("first yield: %v, want the entry", err)
	}
	go func() {
		for _, err := range l.Watch(context.Background(), 2_000_000_000) {
			done <- err
			return
		}
		done <- errors.New("ended without an error")
	}()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, replog.ErrClosed) {
			t.Fatalf("watch of a closed log: %v, want ErrClosed", err)
		}
	case <-time.After(timeout):
		t.Fatal("Close did not end a watch")
	}
	if _, _, err := l.AppendOrGet(ctxT(t), app("w", 2, "x")); !errors.Is(err, replog.ErrClosed) {
		t.Fatalf("append to a closed log: %v, want ErrClosed", err)
	}
}

func testBadSession(t *testing.T, h Harness) {
	l := h.Open(t, replog.Limits{})
	for _, s := range []string{"", string(bytes.Repeat([]byte("a"), replog.MaxSessionLen+1)), "\xff"} {
		if _, _, err := l.AppendOrGet(ctxT(t), app(s, 1, "x")); !errors.Is(err, replog.ErrBadSession) {
			t.Errorf("session %q: %v, want ErrBadSession", s, err)
		}
	}
	// Sessions that look like paths or prefixes of each other stay apart.
	a := mustAppend(t, l, app("a/1", 5, "x"))
	b := mustAppend(t, l, app("a", 1, "y"))
	c := mustAppend(t, l, app(string(bytes.Repeat([]byte("é"), replog.MaxSessionLen)), 1, "z"))
	if a == b || b == c {
		t.Fatalf("positions %d %d %d", a, b, c)
	}
}
