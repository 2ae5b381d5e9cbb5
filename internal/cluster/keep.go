package cluster

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keep keeps the entry's lease alive and the entry current, until Close.
// When the lease is lost (expired: the instance was frozen or cut off
// from etcd longer than its TTL), it revokes it once etcd answers and
// registers the entry again on a new lease.
func (d *Directory) keep(lease clientv3.LeaseID) {
	defer d.workers.Done()
	for {
		d.hold(lease)
		if d.ctx.Err() != nil {
			return
		}
		d.opts.Logger.Warn("instance directory: the entry's lease is lost; registering again", "instance", d.opts.Self.Name, "lease", fmt.Sprintf("%x", lease))
		d.mu.Lock()
		d.lease = clientv3.NoLease
		d.mu.Unlock()
		rctx, cancel := context.WithTimeout(d.ctx, d.opts.SessionTTL)
		_, _ = d.cli.Revoke(rctx, lease) // its entry goes now, if it had not
		cancel()
		if lease = d.register(); lease == clientv3.NoLease {
			return
		}
		d.mu.Lock()
		d.lease = lease
		d.mu.Unlock()
		d.opts.Logger.Info("instance directory: entry registered again", "instance", d.opts.Self.Name, "lease", fmt.Sprintf("%x", lease))
	}
}

// hold keeps lease alive and writes the entry when it changes, until the
// lease is lost or Close.
func (d *Directory) hold(lease clientv3.LeaseID) {
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	ka, err := d.cli.KeepAlive(ctx, lease)
	if err != nil {
		return
	}
	var retry <-chan struct{}
	for {
		select {
		case <-d.ctx.Done():
			return
		case _, ok := <-ka:
			if !ok {
				return
			}
			continue
		case <-d.dirty:
		case <-retry:
		}
		retry = nil
		lost, err := d.write(lease)
		if lost {
			return
		}
		if err != nil {
			d.opts.Logger.Warn("instance directory: cannot write the entry; trying again", "instance", d.opts.Self.Name, "err", err)
			r := make(chan struct{})
			go func() {
				if wait(ctx, d.pause) {
					close(r)
				}
			}()
			retry = r
		}
	}
}

// write puts the entry on lease, if the key is still on it; lost is true
// when it is not (the lease expired and its key went).
func (d *Directory) write(lease clientv3.LeaseID) (lost bool, err error) {
	d.mu.Lock()
	val, err := d.self.encode()
	d.mu.Unlock()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(d.ctx, d.opts.SessionTTL)
	defer cancel()
	tr, err := d.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(d.key), "=", lease)).
		Then(clientv3.OpPut(d.key, string(val), clientv3.WithLease(lease))).
		Commit()
	if err != nil {
		return false, err
	}
	return !tr.Succeeded, nil
}

// register creates the entry on a new lease, retrying until it succeeds
// or Close (NoLease).
func (d *Directory) register() clientv3.LeaseID {
	for {
		ctx, cancel := context.WithTimeout(d.ctx, d.opts.SessionTTL)
		lease, ok, err := d.create(ctx)
		cancel()
		switch {
		case ok:
			return lease
		case d.ctx.Err() != nil:
			return clientv3.NoLease
		case err != nil:
			d.opts.Logger.Warn("instance directory: cannot register the entry yet", "instance", d.opts.Self.Name, "err", err)
		default:
			d.opts.Logger.Error("instance directory: another instance took this instance's name while its lease was lost; trying again", "instance", d.opts.Self.Name)
		}
		if !wait(d.ctx, d.pause) {
			return clientv3.NoLease
		}
	}
}
