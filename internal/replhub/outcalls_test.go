package replhub

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestEveryCopyOfAnOutcallGetsTheReplyOfOneForwarding(t *testing.T) {
	var forwarded atomic.Int32
	release := make(chan struct{})
	o := NewOutcalls(func(ctx context.Context, key string, c protocol.Outcall) (protocol.OutcallReply, error) {
		forwarded.Add(1)
		<-release
		return protocol.OutcallReply{Status: 200, Body: []byte(key)}, nil
	}, nil)
	c := protocol.Outcall{Key: "g/4/0", Method: "POST", URL: "http://callee/increment"}
	var wg sync.WaitGroup
	replies := make([]protocol.OutcallReply, 3)
	started := make(chan struct{}, 3)
	for i := range 3 {
		wg.Go(func() {
			started <- struct{}{}
			r, err := o.Call(context.Background(), c)
			if err != nil {
				t.Error(err)
			}
			replies[i] = r
		})
	}
	for range 3 {
		<-started
	}
	close(release)
	wg.Wait()
	for i, r := range replies {
		if r.Status != 200 || string(r.Body) != "g/4/0" {
			t.Fatalf("copy %d got %+v", i, r)
		}
	}
	// A late copy is answered from the table.
	if r, err := o.Call(context.Background(), c); err != nil || r.Status != 200 {
		t.Fatalf("late copy: %+v, %v", r, err)
	}
	if n := forwarded.Load(); n != 1 {
		t.Fatalf("forwarded %d times, want 1", n)
	}
}

func TestAnUnreachableCalleeIsTheSame502ForEveryCopyAndAKeptReplyExpires(t *testing.T) {
	clk := clocktest.New(t0)
	var forwarded atomic.Int32
	o := NewOutcalls(func(context.Context, string, protocol.Outcall) (protocol.OutcallReply, error) {
		forwarded.Add(1)
		return protocol.OutcallReply{}, errors.New("connection refused")
	}, clk.Now)
	c := protocol.Outcall{Key: "g/1/2", URL: "http://callee/x"}
	a, _ := o.Call(context.Background(), c)
	b, _ := o.Call(context.Background(), c)
	if a.Status != 502 || a.Error == "" || a.Error != b.Error || forwarded.Load() != 1 {
		t.Fatalf("copies got %+v and %+v after %d forwardings", a, b, forwarded.Load())
	}
	clk.Advance(OutcallKeep)
	o.Call(context.Background(), c)
	if forwarded.Load() != 2 {
		t.Fatalf("an expired reply was not forwarded again: %d forwardings", forwarded.Load())
	}
}

func TestACopyWhoseCallerGivesUpDoesNotCancelTheForwarding(t *testing.T) {
	release := make(chan struct{})
	o := NewOutcalls(func(ctx context.Context, _ string, _ protocol.Outcall) (protocol.OutcallReply, error) {
		<-release
		return protocol.OutcallReply{Status: 201}, ctx.Err()
	}, nil)
	c := protocol.Outcall{Key: "g/1/0", URL: "http://callee/x"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := o.Call(ctx, c); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first copy: %v", err)
	}
	close(release)
	if r, err := o.Call(context.Background(), c); err != nil || r.Status != 201 {
		t.Fatalf("second copy: %+v, %v", r, err)
	}
}

func TestParseOutcallKey(t *testing.T) {
	if p, i, err := protocol.ParseOutcallKey("g/12/3", "g"); err != nil || p != 12 || i != 3 {
		t.Fatalf("ParseOutcallKey = %d, %d, %v", p, i, err)
	}
	for _, k := range []string{"h/1/0", "g/1", "g/0/0", "g/x/0", "g/1/-1", "g/1/0/0"} {
		if _, _, err := protocol.ParseOutcallKey(k, "g"); err == nil {
			t.Errorf("ParseOutcallKey(%q) accepted", k)
		}
	}
}
