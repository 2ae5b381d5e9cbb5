package frontdoor

import (
	"context"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// MoveLookupTimeout bounds PickRebind's wait for LookupMove: a client
// coming back to be bound again waits this much longer at most when the
// lookup is slow or etcd is away.
const MoveLookupTimeout = 100 * time.Millisecond

// PickRebind chooses the member for a client that comes back to the
// front door to be bound again (Fulcrum-Rebind): as Pick, but a client
// that Planned does not name, and whose move LookupMove finds to an active
// member, goes to that member, and looked is true. The lookup is bounded
// by MoveLookupTimeout (and ctx) even when LookupMove overruns its
// deadline; when it fails, times out or names a member that cannot take
// the client, the picker chooses as in Pick. Callers tell MoveBound when
// they bind the client to a looked-up move. Only for rebinds: ordinary
// calls use Pick, which never waits.
func (s *Snapshot) PickRebind(ctx context.Context, r *strategy.Request) (m *Member, looked bool, err error) {
	if s.LookupMove != nil && r.Client != "" {
		if _, planned := s.Planned[r.Client]; !planned {
			if m := s.lookupMove(ctx, r.Client); m != nil {
				return m, true, nil
			}
		}
	}
	m, err = s.Pick(r)
	return m, false, err
}

// lookupMove is the active member LookupMove names for client, or nil.
func (s *Snapshot) lookupMove(ctx context.Context, client string) *Member {
	ctx, cancel := context.WithTimeout(ctx, MoveLookupTimeout)
	defer cancel()
	type found struct {
		id string
		ok bool
	}
	ch := make(chan found, 1) // the lookup never blocks on sending, even after we gave up
	go func() {
		id, ok := s.LookupMove(ctx, client)
		ch <- found{id, ok}
	}()
	var f found
	select {
	case f = <-ch:
	case <-ctx.Done():
		return nil
	}
	if !f.ok {
		return nil
	}
	if m := s.Members[f.id]; m != nil && m.State == protocol.StateActive {
		return m
	}
	return nil
}
