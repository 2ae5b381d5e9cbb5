package balancer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Load pushes (loadview.go). After each step of a group it leads in a
// cluster, this instance POSTs its view of the group's loads to every
// other instance's /v1/cluster/loads (Options.PeerAdminURLs, with the admin token
// of Options.PeerToken), all at once, bounded by the report interval. A
// push still running when the next step comes makes that step's push be
// skipped rather than queued. Loads never go through the store.

// LoadsPath is the route of the load pushes.
const LoadsPath = "/v1/cluster/loads"

// loadViewLocked is the group's load view to push after this step, or nil
// when there is nothing to push (not in a cluster, not leading, no
// peers). Caller holds g.mu.
func (g *group) loadViewLocked(r role) *protocol.LoadView {
	if g.b.opts.Leadership == nil || g.b.opts.PeerAdminURLs == nil || !r.lead || r.term <= 0 {
		return nil
	}
	v := &protocol.LoadView{Group: g.name, Term: uint64(r.term), Leader: r.status.Leader, Replicas: make([]protocol.ReplicaLoad, 0, len(g.lastStep.Replicas))}
	for _, rv := range g.lastStep.Replicas {
		rl := protocol.ReplicaLoad{ID: rv.ID, Reported: rv.Reported}
		if rv.Reported {
			rl.Load, rl.Sample, rl.Metrics, rl.Clients = rv.Load, rv.Sample, rv.Metrics, len(rv.Clients)
		}
		if rv.EverReported {
			age := rv.ReportAge.Milliseconds()
			rl.ReportAgeMS = &age
		}
		rl.Advisory, rl.Shed, rl.Epoch = rv.Advisory.Advisory, rv.Advisory.Shed, rv.Advisory.Epoch
		v.Replicas = append(v.Replicas, rl)
	}
	for _, m := range g.lastStep.Moves {
		v.Moves = append(v.Moves, protocol.PlannedMove{Client: m.Client, From: m.From, To: m.To, Rate: m.Rate})
	}
	if !g.pushing.Load() { // else this step's push is skipped: they wait for the next
		v.Completed, g.completed = g.completed, nil
	}
	return v
}

// pushLoads sends v to every peer in the background. Caller must not hold
// g.mu.
func (g *group) pushLoads(v *protocol.LoadView) {
	if v == nil {
		return
	}
	peers := g.b.opts.PeerAdminURLs()
	if len(peers) == 0 || !g.pushing.CompareAndSwap(false, true) {
		return
	}
	body, err := json.Marshal(v)
	if err != nil {
		g.pushing.Store(false)
		g.b.log.Error("cannot encode the load view", "group", g.name, "err", err)
		return
	}
	g.mu.Lock()
	timeout := g.spec.ReportInterval.D()
	g.mu.Unlock()
	started := g.b.goAsync(func() {
		defer g.pushing.Store(false)
		ctx, cancel := context.WithTimeout(g.b.ctx, timeout)
		defer cancel()
		done := make(chan struct{}, len(peers))
		for _, p := range peers {
			go func() {
				defer func() { done <- struct{}{} }()
				if err := g.b.postPeer(ctx, p, LoadsPath, body, nil); err != nil {
					g.b.pushFailed(pushKindLoads, g.name, p, err) // peerfailures.go
				}
			}()
		}
		for range peers {
			<-done
		}
	})
	if !started {
		g.pushing.Store(false)
	}
}

// postPeer POSTs an encoded body to path on the instance at base, with
// the admin token, and decodes a 200's answer into out (when not nil).
func (b *Balancer) postPeer(ctx context.Context, base, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if b.opts.PeerToken != nil {
		if t := b.opts.PeerToken(); t != "" {
			req.Header.Set("Authorization", "Bearer "+t)
		}
	}
	resp, err := b.opts.PeerClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("balancer: %s%s answered %s: %s", base, path, resp.Status, bytes.TrimSpace(msg))
	}
	if out != nil {
		if err := json.Unmarshal(msg, out); err != nil {
			return fmt.Errorf("balancer: %s%s answered %q: %w", base, path, bytes.TrimSpace(msg), err)
		}
	}
	return nil
}
