package etcdstore

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
)

type tlsFiles = certs.ClientFiles

func clientPrefix() clientv3.OpOption { return clientv3.WithPrefix() }
