package demo

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
)

// The demo over GIOP (--protocol giop): the replicas are Go Prime servants
// (backend prime --giop, monitor built in, registered with their IORs) and
// each client has a client ORB of its own that calls is_prime on the
// group's corbaloc reference, is forwarded to a replica by the front door
// and calls it directly until forwarded again, as any CORBA ORB does.

// listenAddr is the host:port a replica listened on, from its address (a
// base URL, or over GIOP its IOR), to restart it there.
func listenAddr(addr string) string {
	if hp := iorHostPort(addr); hp != "" {
		return hp
	}
	return strings.TrimPrefix(addr, "http://")
}

// iorHostPort is the endpoint of a GIOP reference's first IIOP profile; ""
// when addr is not one.
func iorHostPort(addr string) string {
	r, err := ior.Parse(addr)
	if err != nil {
		return ""
	}
	p, ok := r.IIOP()
	if !ok {
		return ""
	}
	return p.Address().HostPort()
}

// replicaNames maps the endpoint of a replica's reference to its id, from
// the group's replica list, read again when an endpoint is not in it (a
// replica that registered anew). Safe for concurrent use.
type replicaNames struct {
	b *balancer.Balancer

	mu     sync.Mutex
	byAddr map[string]string
	read   time.Time
}

func newReplicaNames(b *balancer.Balancer) *replicaNames {
	return &replicaNames{b: b, byAddr: map[string]string{}}
}

// id returns the id of the replica at hostPort, or hostPort when the group
// has none there.
func (n *replicaNames) id(hostPort string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if id, ok := n.byAddr[hostPort]; ok {
		return id
	}
	if time.Since(n.read) > 200*time.Millisecond {
		n.read = time.Now()
		if st, err := n.b.Group("prime"); err == nil {
			for _, r := range st.Replicas {
				if hp := iorHostPort(r.Address); hp != "" {
					n.byAddr[hp] = r.ID
				}
			}
		}
		if id, ok := n.byAddr[hostPort]; ok {
			return id
		}
	}
	return hostPort
}

// startGIOPClients is startClients over GIOP.
func startGIOPClients(ctx context.Context, ref string, rates []float64, t *tally, names *replicaNames) *clientSet {
	ctx, cancel := context.WithCancel(ctx)
	cs := &clientSet{cancel: cancel}
	for i, rate := range rates {
		cs.wg.Add(1)
		go func() {
			defer cs.wg.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(i) * clientGap):
			}
			runGIOPClient(ctx, ref, rate, t, names)
		}()
	}
	return cs
}

// runGIOPClient calls is_prime(primeN) on ref at rate calls/s until ctx is
// done, on the fixed grid of runClient. A call is counted for the replica
// whose reference answered it; a change of the replica the client is
// forwarded to is a rebind.
func runGIOPClient(ctx context.Context, ref string, rate float64, t *tally, names *replicaNames) {
	o, err := orb.New(orb.Options{})
	if err != nil {
		t.fail()
		return
	}
	defer o.Close()
	obj, err := o.Resolve(ref)
	if err != nil {
		t.fail()
		return
	}
	prime := orb.Prime{Object: obj}
	frontDoor := iorHostPort(ref)
	period := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var bound string
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, res, err := prime.IsPrime(cctx, primeN)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			t.fail()
		default:
			// A call the front door answered itself was proxied
			// (per-request): sampleProxied counts it for its replica.
			if p, _ := res.Target.IIOP(); p.Address().HostPort() != frontDoor {
				t.served(names.id(p.Address().HostPort()))
			}
		}
		if obj.Forwarded() {
			p, _ := obj.Target().IIOP()
			now := p.Address().HostPort()
			if bound != "" && now != bound {
				t.rebind()
			}
			bound = now
		}
		next = next.Add(period)
		if wait := time.Until(next); wait > 0 {
			timer.Reset(wait)
		} else {
			timer.Reset(0)
		}
	}
}

// sampleProxied counts the calls of a per-request GIOP group, which come
// back from the front door, for the replicas it passed them to: once a
// second it reads each replica's proxied counter and tallies the increase.
func sampleProxied(ctx context.Context, b *balancer.Balancer, t *tally) {
	prev := map[string]uint64{}
	read := func(count bool) {
		st, err := b.Group("prime")
		if err != nil {
			return
		}
		for _, r := range st.Replicas {
			if n := r.Counters.Proxied - prev[r.ID]; count && n > 0 && r.Counters.Proxied >= prev[r.ID] {
				t.servedN(r.ID, int(n))
			}
			prev[r.ID] = r.Counters.Proxied
		}
	}
	read(false)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			read(true)
		}
	}
}

func (t *tally) servedN(id string, n int) {
	t.mu.Lock()
	t.counts[id] += n
	t.mu.Unlock()
}
