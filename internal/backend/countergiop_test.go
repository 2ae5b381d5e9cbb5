package backend_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
)

// startGIOPCounter serves a Counter servant of c on a loopback port and
// returns its reference; the test's cleanup shuts it down.
func startGIOPCounter(t *testing.T, c *backend.Counter, opts backend.GIOPCounterOptions) ior.IOR {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := backend.NewGIOPCounter(c, opts)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, backend.ErrGIOPServerClosed) {
			t.Errorf("Serve returned %v, want ErrGIOPServerClosed", err)
		}
	})
	return s.Reference("127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port))
}

func counterClient(t *testing.T, o *orb.ORB, ref ior.IOR) backend.CounterClient {
	t.Helper()
	obj, err := o.Object(ref)
	if err != nil {
		t.Fatal(err)
	}
	return backend.CounterClient{Object: obj}
}

// increment, value, get_state and set_state in every GIOP version and
// byte order; the state moves into a fresh counter unchanged; garbage
// raises FT::InvalidState and changes nothing.
func TestGIOPCounterOperations(t *testing.T) {
	t.Parallel()
	for _, v := range []giop.Version{giop.V10, giop.V11, giop.V12} {
		for _, order := range []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian} {
			t.Run(fmt.Sprintf("%v-%v", v, order), func(t *testing.T) {
				t.Parallel()
				ctx := testCtx(t)
				o := newORB(t, orb.Options{Version: v, Order: order})
				c := &backend.Counter{}
				cc := counterClient(t, o, startGIOPCounter(t, c, backend.GIOPCounterOptions{}))
				for want := int64(1); want <= 3; want++ {
					got, err := cc.Increment(ctx)
					if err != nil || got != want {
						t.Fatalf("increment = %d, %v; want %d", got, err, want)
					}
				}
				if got, err := cc.Value(ctx); err != nil || got != 3 {
					t.Fatalf("value = %d, %v; want 3", got, err)
				}
				state, err := cc.GetState(ctx)
				if err != nil || !bytes.Equal(state, backend.MarshalCounterState(c.State())) {
					t.Fatalf("get_state = %q, %v; want %q", state, err, backend.MarshalCounterState(c.State()))
				}
				ok, err := cc.Object.IsA(ctx, backend.CheckpointableRepoID)
				if err != nil || !ok {
					t.Fatalf("_is_a(Checkpointable) = %v, %v", ok, err)
				}

				fresh := &backend.Counter{}
				fc := counterClient(t, o, startGIOPCounter(t, fresh, backend.GIOPCounterOptions{}))
				if err := fc.SetState(ctx, state); err != nil {
					t.Fatalf("set_state: %v", err)
				}
				if got, err := fc.GetState(ctx); err != nil || !bytes.Equal(got, state) {
					t.Fatalf("fresh get_state = %q, %v; want %q", got, err, state)
				}
				if got, err := fc.Increment(ctx); err != nil || got != 4 {
					t.Fatalf("fresh increment = %d, %v; want 4", got, err)
				}
				for _, garbage := range [][]byte{nil, []byte("garbage"), []byte(`{"value":1}`)} {
					err := fc.SetState(ctx, garbage)
					if !backend.IsUserException(err, backend.InvalidStateRepoID) {
						t.Fatalf("set_state(%q) = %v, want FT::InvalidState", garbage, err)
					}
				}
				if got, err := fc.Value(ctx); err != nil || got != 4 {
					t.Fatalf("value after refused set_state = %d, %v; want 4", got, err)
				}
			})
		}
	}
}

// The servant's USER_EXCEPTION reply is the exception's repository id as a
// CDR string and nothing more, read here off the raw reply.
func TestGIOPCounterInvalidStateWire(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	o := newORB(t, orb.Options{})
	obj, err := o.Object(startGIOPCounter(t, &backend.Counter{}, backend.GIOPCounterOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := obj.Invoke(ctx, backend.OpSetState, func(e *cdr.Encoder) { e.OctetSeq([]byte("x")) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply.Status != giop.StatusUserException {
		t.Fatalf("reply status %v, want USER_EXCEPTION", res.Reply.Status)
	}
	d := res.Reply.BodyDecoder()
	id := d.String("id")
	d.Done("id")
	if d.Err() != nil || id != backend.InvalidStateRepoID {
		t.Fatalf("exception body: id %q, err %v; want %q alone", id, d.Err(), backend.InvalidStateRepoID)
	}
	// Arguments where none are declared: MARSHAL.
	_, err = obj.Invoke(ctx, backend.OpIncrement, func(e *cdr.Encoder) { e.Long(1) })
	var ex giop.SystemException
	if !errors.As(err, &ex) || ex.Name() != "MARSHAL" {
		t.Fatalf("increment(1) = %v, want MARSHAL", err)
	}
}

// Concurrent increments through the Go ORB give exactly N; a GIOP relay
// adds each of the counter's answers to its own counter.
func TestGIOPRelayConcurrent(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	o := newORB(t, orb.Options{})
	tier3 := &backend.Counter{}
	next := counterClient(t, o, startGIOPCounter(t, tier3, backend.GIOPCounterOptions{}))
	tier2 := &backend.Counter{}
	relay := counterClient(t, o, startGIOPCounter(t, tier2, backend.GIOPCounterOptions{Next: next.Increment}))
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if _, err := relay.Increment(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	const n = workers * each
	if got := tier3.State(); got.Value != n || got.Increments != n {
		t.Fatalf("tier 3 state %+v, want value and increments %d", got, n)
	}
	if got := tier2.State(); got.Value != n*(n+1)/2 || got.Increments != n {
		t.Fatalf("relay state %+v, want value %d from %d increments", got, n*(n+1)/2, n)
	}
	if v, err := relay.Value(ctx); err != nil || v != n*(n+1)/2 {
		t.Fatalf("relay value() = %d, %v", v, err)
	}
}
