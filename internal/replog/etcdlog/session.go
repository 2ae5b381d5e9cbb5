package etcdlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// sessionLease is this instance's knowledge of a session's lease.
type sessionLease struct {
	mu      sync.Mutex // held while finding, granting or renewing
	id      clientv3.LeaseID
	renewed time.Time // zero: no lease known
}

// maxCachedSessions is when lease looks start forgetting sessions not
// used for a TTL.
const maxCachedSessions = 4096

// lease returns the session's lease, live as of now: the one this
// instance knows, renewed if its last renewal is a third of the TTL old;
// or the one the session key names; or a new one, which becomes the
// session's unless another instance's came first.
func (l *Log) lease(ctx context.Context, session string) (clientv3.LeaseID, error) {
	now := l.opts.Clock.Now()
	l.mu.Lock()
	s, ok := l.sessions[session]
	if !ok {
		if len(l.sessions) >= maxCachedSessions {
			for name, old := range l.sessions {
				if old.mu.TryLock() {
					if now.Sub(old.renewed) > l.opts.SessionTTL {
						delete(l.sessions, name)
					}
					old.mu.Unlock()
				}
			}
		}
		s = &sessionLease{}
		l.sessions[session] = s
	}
	l.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.renewed.IsZero() {
		if now.Sub(s.renewed) < l.opts.SessionTTL/3 {
			return s.id, nil
		}
		_, err := l.cli.KeepAliveOnce(ctx, s.id)
		switch {
		case err == nil:
			s.renewed = now
			return s.id, nil
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			s.renewed = time.Time{} // lapsed: find or grant again
		default:
			return 0, fmt.Errorf("renew the lease of session %q: %w", session, err)
		}
	}
	key := l.k.session(session)
	resp, err := l.cli.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("session %q: %w", session, err)
	}
	if len(resp.Kvs) == 1 && resp.Kvs[0].Lease != 0 {
		id := clientv3.LeaseID(resp.Kvs[0].Lease)
		if _, err := l.cli.KeepAliveOnce(ctx, id); err == nil {
			s.id, s.renewed = id, now
			return id, nil
		} else if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return 0, fmt.Errorf("renew the lease of session %q: %w", session, err)
		}
		// Lapsed between the read and the renewal: etcd deletes the key.
	}
	g, err := l.cli.Grant(ctx, int64(l.opts.SessionTTL/time.Second))
	if err != nil {
		return 0, fmt.Errorf("grant a lease for session %q: %w", session, err)
	}
	tr, err := l.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, strconv.FormatInt(int64(g.ID), 16), clientv3.WithLease(g.ID))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("session %q: %w", session, err)
	}
	if tr.Succeeded {
		s.id, s.renewed = g.ID, now
		return g.ID, nil
	}
	// Another instance gave the session its lease first: use that one.
	if _, err := l.cli.Revoke(ctx, g.ID); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return 0, fmt.Errorf("revoke an unused lease: %w", err)
	}
	kvs := tr.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) != 1 || kvs[0].Lease == 0 {
		return 0, fmt.Errorf("session %q: its key changed while granting a lease; try again", session)
	}
	s.id, s.renewed = clientv3.LeaseID(kvs[0].Lease), now
	return s.id, nil
}

// forgetLease drops the session's lease id if it is still id.
func (l *Log) forgetLease(session string, id clientv3.LeaseID) {
	l.mu.Lock()
	s, ok := l.sessions[session]
	l.mu.Unlock()
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id == id {
		s.renewed = time.Time{}
	}
}
