package cluster

import (
	"context"
	"maps"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// observe keeps the view of the other instances' entries: it lists the
// directory, then watches it, and lists again whenever the watch breaks
// (a compaction, etcd unreachable). Until a list succeeds the last view
// stays.
func (d *Directory) observe() {
	defer d.workers.Done()
	for d.ctx.Err() == nil {
		rev, err := d.list()
		if err == nil {
			err = d.watch(rev)
		}
		if d.ctx.Err() != nil {
			return
		}
		d.opts.Logger.Debug("instance directory: watch broke; listing again", "err", err)
		if !wait(d.ctx, d.pause) {
			return
		}
	}
}

// list reads every entry and replaces the view; it returns the revision
// read at.
func (d *Directory) list() (int64, error) {
	ctx, cancel := context.WithTimeout(d.ctx, d.opts.SessionTTL)
	defer cancel()
	resp, err := d.cli.Get(ctx, d.root, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	others := map[string]Entry{}
	for _, kv := range resp.Kvs {
		if e, ok := d.decode(kv); ok {
			others[e.Name] = e
		}
	}
	d.mu.Lock()
	if !maps.EqualFunc(d.others, others, sameEntry) {
		d.others = others
		d.changedLocked()
	}
	d.mu.Unlock()
	return resp.Header.Revision, nil
}

// watch applies the directory's changes from after rev until the watch
// breaks or Close.
func (d *Directory) watch(rev int64) error {
	// WithRequireLeader: a member cut off from the others (no raft
	// leader) ends the watch, and the view is listed again from one that
	// has one.
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(d.ctx))
	defer cancel()
	for wr := range d.cli.Watch(ctx, d.root, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			return err
		}
		d.mu.Lock()
		for _, ev := range wr.Events {
			name := string(ev.Kv.Key[len(d.root):])
			if ev.Type == mvccpb.DELETE {
				delete(d.others, name)
				continue
			}
			if e, ok := d.decode(ev.Kv); ok {
				d.others[e.Name] = e
			} else {
				delete(d.others, name)
			}
		}
		d.changedLocked()
		d.mu.Unlock()
	}
	return d.ctx.Err()
}

// decode decodes an entry of another instance; this instance's own key
// and keys that cannot be decoded (logged) are left out.
func (d *Directory) decode(kv *mvccpb.KeyValue) (Entry, bool) {
	key := string(kv.Key)
	if key == d.key {
		return Entry{}, false
	}
	e, err := DecodeEntry(d.opts.Prefix, key, kv.Value)
	if err != nil {
		d.opts.Logger.Warn("instance directory: key cannot be decoded; skipped", "key", key, "err", err)
		return Entry{}, false
	}
	return e, true
}

func sameEntry(a, b Entry) bool {
	return a.Name == b.Name && a.AdminURL == b.AdminURL && a.Started.Equal(b.Started) && a.Version == b.Version && maps.Equal(a.FrontDoors, b.FrontDoors)
}
