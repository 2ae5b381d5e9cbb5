package giopdoor_test

import (
	"context"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// benchCalls makes b.N is_prime calls on ref with one client ORB, from
// GOMAXPROCS goroutines.
func benchCalls(b *testing.B, ref string) {
	o, err := orb.New(orb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	obj, err := o.Resolve(ref)
	if err != nil {
		b.Fatal(err)
	}
	prime := orb.Prime{Object: obj}
	if _, _, err := prime.IsPrime(context.Background(), 7919); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := prime.IsPrime(context.Background(), 7919); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDirect calls a Prime servant directly; BenchmarkPerRequest
// through the GIOP proxy; BenchmarkOnDemand through the front door's
// forward (one forward, then direct). Run them under
// flock /tmp/fulcrum-bench.lock.
func BenchmarkDirect(b *testing.B) {
	ref := startPrime(b)
	benchCalls(b, ref.String())
}

func BenchmarkPerRequest(b *testing.B) {
	bal := newBalancer(b)
	st, _, err := bal.PutGroup(protocol.Group{Name: "g", Protocol: protocol.ProtocolGIOP, FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest, Strategy: "round-robin"})
	if err != nil {
		b.Fatal(err)
	}
	register(b, bal, "g", startPrime(b).String())
	benchCalls(b, st.Reference.Corbaloc)
}

func BenchmarkOnDemand(b *testing.B) {
	bal := newBalancer(b)
	st, _, err := bal.PutGroup(protocol.Group{Name: "g", Protocol: protocol.ProtocolGIOP, FrontDoor: "127.0.0.1:0", Strategy: "round-robin"})
	if err != nil {
		b.Fatal(err)
	}
	register(b, bal, "g", startPrime(b).String())
	benchCalls(b, st.Reference.Corbaloc)
}
