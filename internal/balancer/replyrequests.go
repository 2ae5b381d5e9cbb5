package balancer

import (
	"context"
	"encoding/json"
	"net/url"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Reply requests across a cluster: a bridge that needs the reply to an
// entry again (a retried request) asks its hub's streams, and, through
// the hub's AskPeers, the other instances, whose streams may hold the
// agents that have the reply.

// ReplyRequestPath is the route, under a group's path, where the other
// instances of a cluster pass on reply requests (AskFor).
const ReplyRequestPath = "/log/ask"

// askTimeout bounds the passing of a reply request to the other
// instances.
const askTimeout = 2 * time.Second

// askPeers is the hub's AskPeers: in a cluster, a reply request goes to
// every other live instance (Options.PeerAdminURLs, with the admin token
// of Options.PeerToken), whose streams may hold the agents that have the
// reply; they have it posted to this instance. Nil on a single node.
func (g *group) askPeers() func(pos uint64) {
	if g.b.opts.PeerAdminURLs == nil {
		return nil
	}
	return func(pos uint64) {
		peers := g.b.opts.PeerAdminURLs()
		if len(peers) == 0 {
			return
		}
		body, err := json.Marshal(protocol.ReplyRequest{Position: pos, ReplyTo: *g.b.adminURL.Load()})
		if err != nil {
			g.b.log.Error("cannot encode a reply request", "group", g.name, "err", err)
			return
		}
		path := "/v1/groups/" + url.PathEscape(g.name) + ReplyRequestPath
		g.b.goAsync(func() {
			ctx, cancel := context.WithTimeout(g.b.ctx, askTimeout)
			defer cancel()
			var wg sync.WaitGroup
			for _, p := range peers {
				wg.Go(func() {
					if err := g.b.postPeer(ctx, p, path, body, nil); err != nil {
						g.b.pushFailed(pushKindAsk, g.name, p, err) // peerfailures.go
					}
				})
			}
			wg.Wait()
		})
	}
}

// AskFor passes another instance's reply request on to the streams of
// replicated group name on this instance (POST
// /v1/groups/{name}/log/ask). Errors are ReplicatedHub's.
func (b *Balancer) AskFor(name string, r protocol.ReplyRequest) error {
	h, _, err := b.ReplicatedHub(name)
	if err != nil {
		return err
	}
	h.AskFor(r.Position, r.ReplyTo)
	return nil
}
