package cluster

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// claim creates the entry on a new lease, waiting for another holder's
// key to go first; it returns the lease.
func (d *Directory) claim(ctx context.Context) (clientv3.LeaseID, error) {
	var (
		deadline time.Time
		started  = time.Now()
	)
	for {
		gctx, cancel := context.WithTimeout(ctx, d.opts.SessionTTL)
		resp, err := d.cli.Get(gctx, d.key)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("cluster: read %s: %w", d.key, err)
		}
		held := len(resp.Kvs) > 0
		var holderLease int64
		if held {
			holderLease = resp.Kvs[0].Lease
		}
		now := time.Now()
		switch decideClaim(held, holderLease, 0, !deadline.IsZero() && !now.Before(deadline)) {
		case claimCreate:
			lease, ok, err := d.create(ctx)
			if err != nil {
				return 0, err
			}
			if ok {
				return lease, nil
			}
			continue // taken meanwhile: look again
		case claimRefuse:
			e := &NameTakenError{Name: d.opts.Self.Name, Waited: now.Sub(started)}
			if held, err := DecodeEntry(d.opts.Prefix, d.key, resp.Kvs[0].Value); err == nil {
				e.AdminURL = held.AdminURL
			}
			return 0, e
		}
		if deadline.IsZero() {
			var ttl time.Duration
			if t, err := d.cli.TimeToLive(ctx, clientv3.LeaseID(holderLease)); err == nil && t.GrantedTTL > 0 {
				ttl = time.Duration(t.GrantedTTL) * time.Second
			}
			wait := claimWaitFor(ttl, d.opts.SessionTTL)
			deadline = now.Add(wait)
			var at string
			if held, err := DecodeEntry(d.opts.Prefix, d.key, resp.Kvs[0].Value); err == nil {
				at = held.AdminURL
			}
			d.opts.Logger.Warn("instance name is held by another instance; waiting for its entry to expire", "instance", d.opts.Self.Name, "holder_admin_url", at, "wait", wait)
		}
		if err := d.awaitGone(ctx, resp.Header.Revision, deadline); err != nil {
			return 0, err
		}
	}
}

// awaitGone watches the key from after rev until it is deleted or
// deadline passes.
func (d *Directory) awaitGone(ctx context.Context, rev int64, deadline time.Time) error {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for wr := range d.cli.Watch(wctx, d.key, clientv3.WithRev(rev+1), clientv3.WithFilterPut()) {
		if wr.Err() != nil {
			return nil // look again
		}
		if len(wr.Events) > 0 {
			return nil
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("cluster: waiting for instance name %q: %w", d.opts.Self.Name, ctx.Err())
	}
	return nil
}

// create grants a lease and creates the entry on it if the key is absent;
// ok is false (and the lease revoked) when it is not.
func (d *Directory) create(ctx context.Context) (clientv3.LeaseID, bool, error) {
	g, err := d.cli.Grant(ctx, int64(d.opts.SessionTTL/time.Second))
	if err != nil {
		return 0, false, fmt.Errorf("cluster: grant a lease: %w", err)
	}
	d.mu.Lock()
	val, err := d.self.encode()
	d.mu.Unlock()
	if err != nil {
		return 0, false, err
	}
	tr, err := d.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(d.key), "=", 0)).
		Then(clientv3.OpPut(d.key, string(val), clientv3.WithLease(g.ID))).
		Commit()
	if err == nil && tr.Succeeded {
		return g.ID, true, nil
	}
	rctx, cancel := context.WithTimeout(context.Background(), d.opts.SessionTTL)
	_, _ = d.cli.Revoke(rctx, g.ID)
	cancel()
	if err != nil {
		return 0, false, fmt.Errorf("cluster: create %s: %w", d.key, err)
	}
	return 0, false, nil
}
