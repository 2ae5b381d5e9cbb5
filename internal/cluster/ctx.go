package cluster

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// clientv3WithTimeout bounds one request to etcd by the session TTL.
func clientv3WithTimeout(d *Directory) (context.Context, context.CancelFunc) {
	return context.WithTimeout(d.ctx, d.opts.SessionTTL)
}

// clientv3WithLeader is a watch context that ends the watch when the
// member loses its raft leader (cut off from the others), so that the
// view is listed again from a member that has one.
func clientv3WithLeader(d *Directory) (context.Context, context.CancelFunc) {
	return context.WithCancel(clientv3.WithRequireLeader(d.ctx))
}
