package cluster

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// HealthTimeout bounds each endpoint's status call in Health.
const HealthTimeout = time.Second

// Health asks each of endpoints for its status (at once, each bounded by
// timeout, HealthTimeout when 0): whether it answered, its version,
// whether it is etcd's leader, its database size, or the error.
func Health(ctx context.Context, cli *clientv3.Client, endpoints []string, timeout time.Duration) []protocol.EtcdEndpoint {
	if timeout <= 0 {
		timeout = HealthTimeout
	}
	out := make([]protocol.EtcdEndpoint, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			resp, err := cli.Status(ctx, ep)
			out[i] = endpointHealth(ep, resp, err)
		}()
	}
	wg.Wait()
	return out
}

// endpointHealth reads one status answer.
func endpointHealth(ep string, resp *clientv3.StatusResponse, err error) protocol.EtcdEndpoint {
	h := protocol.EtcdEndpoint{Endpoint: ep}
	if err != nil {
		h.Error = err.Error()
		return h
	}
	h.Reachable = true
	h.Version = resp.Version
	h.DBSize = resp.DbSize
	h.Leader = resp.Header != nil && resp.Leader != 0 && resp.Leader == resp.Header.MemberId
	if len(resp.Errors) > 0 {
		h.Error = resp.Errors[0]
	}
	return h
}
