package giopagent_test

import (
	"fmt"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/agent/giopagent"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
)

// TestFragmentsPassThrough sends requests in fragments, GIOP 1.1 and 1.2,
// both byte orders, with a plain call in between for 1.2 (whose fragments
// may interleave with other messages); the servant joins them and replies
// in fragments, which the agent passes back whole.
func TestFragmentsPassThrough(t *testing.T) {
	t.Parallel()
	s := startServant(t)
	_, addr := startAgent(t, giopagent.Options{Target: s.ref})
	for _, v := range []giop.Version{giop.V11, giop.V12} {
		for _, o := range orders {
			t.Run(fmt.Sprintf("%v/%v", v, o), func(t *testing.T) {
				rc := dialRaw(t, addr)
				req := rc.request(v, o, giop.OpPrimeCount, 100)
				out, err := giop.EncodeMessage(req)
				if err != nil {
					t.Fatal(err)
				}
				pieces := splitMessage(t, out, req.BodyOffset, req.RequestID)
				rc.sendBytes(pieces[0])
				if v == giop.V12 {
					// Another call between the pieces.
					rep := rc.call(rc.request(v, o, giop.OpIsPrime, 13))
					if ok, err := rep.BooleanResult(); err != nil || !ok {
						t.Fatalf("is_prime(13) between fragments = %v, %v", ok, err)
					}
				}
				rc.sendBytes(pieces[1])
				m := rc.recv()
				rep, ok := m.(*giop.Reply)
				if !ok || rep.RequestID != req.RequestID {
					t.Fatalf("answer %+v, want the reply to %d", m, req.RequestID)
				}
				if c, err := rep.LongResult(); err != nil || c != 25 {
					t.Fatalf("prime_count(100) in fragments = %d, %v; want 25", c, err)
				}
				if rc.fragmentedReplies != 1 {
					t.Errorf("%d replies came in fragments, want 1", rc.fragmentedReplies)
				}
			})
		}
	}
}
