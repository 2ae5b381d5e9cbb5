package effectiveness

import (
	"context"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// newEffGIOPClient is newEffClient over GIOP: a client with an ORB of its
// own calling is_prime(effPrimeN) on the group's reference. The replica
// that answered is the one whose reference the reply came from (byAddr
// maps a replica's host:port to its id); the client's binding is the
// reference it was forwarded to. A per-request client's calls all come back
// from the front door, so the replicas' shares are read from the balancer
// instead (effProxiedSampler).
func newEffGIOPClient(ref, binding string, rate float64, byAddr map[string]string) (*pacedClient, func(), error) {
	o, err := orb.New(orb.Options{})
	if err != nil {
		return nil, nil, err
	}
	obj, err := o.Resolve(ref)
	if err != nil {
		_ = o.Close()
		return nil, nil, err
	}
	idOf := func(r ior.IOR) string {
		p, _ := r.IIOP()
		hp := p.Address().HostPort()
		if id, ok := byAddr[hp]; ok {
			return id
		}
		return hp
	}
	c := &pacedClient{rate: rate, rec: stats.NewRecorder(), lag: stats.NewRecorder()}
	prime := orb.Prime{Object: obj}
	c.call = func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, effCallTimeout)
		defer cancel()
		_, res, err := prime.IsPrime(ctx, effPrimeN)
		if err != nil {
			return "", err
		}
		if binding == protocol.PerRequest {
			return effViaFrontDoor, nil
		}
		return idOf(res.Target), nil
	}
	if binding != protocol.PerRequest {
		c.bound = func() string {
			if !obj.Forwarded() {
				return ""
			}
			return idOf(obj.Target())
		}
	}
	return c, func() { _ = o.Close() }, nil
}

// effViaFrontDoor is the "replica" of a per-request GIOP call: the front
// door answered it, having passed it on to a replica the client cannot see.
const effViaFrontDoor = "front-door"

// giopAddrs maps the host:port of each replica's IOR to its id.
func giopAddrs(st bench.GroupStatus) map[string]string {
	m := map[string]string{}
	for _, r := range st.Replicas {
		if hp := bench.GIOPHostPort(r.Address); hp != "" {
			m[hp] = r.ID
		}
	}
	return m
}

// effGIOPNote is the report's note on GIOP runs.
func effGIOPNote(rep *bench.Report) {
	rep.Heading("Over GIOP")
	rep.Para("The replicas are Go Prime servants over GIOP (`fulcrum backend prime --giop`, monitor built in), the clients fulcrum's client ORB "+
		"calling `is_prime(%d)` on the group's `corbaloc:iiop:` reference and following LOCATION_FORWARD as any CORBA ORB does; "+
		"a call is counted for the replica whose reference answered it. A replica's monitor sends a client back under a high advisory by "+
		"answering its next call LOCATION_FORWARD to the group's reference.", effPrimeN)
}

// sampleProxied counts a per-request GIOP run's calls per replica from the
// balancer: once a second from the log's start it reads how many calls the
// front door has passed to each replica, and logs the increase as that
// second's served calls. The calls are thus counted in the second they were
// passed on (not the one they were meant to be sent in). stop ends the
// sampling after a last read.
func sampleProxied(ctx context.Context, b *bench.Balancer, log *serveLog) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	prev := map[string]uint64{}
	read := func(sec int) {
		st, err := b.Group(context.WithoutCancel(ctx), effGroup)
		if err != nil {
			return
		}
		for _, r := range st.Replicas {
			if n := r.Counters.Proxied; n > prev[r.ID] && sec >= 0 {
				log.addServedN(sec, r.ID, int(n-prev[r.ID]))
			}
			prev[r.ID] = r.Counters.Proxied
		}
	}
	read(-1) // the baseline: warm-up and health probes before the start
	go func() {
		defer close(done)
		for sec := 0; ; sec++ {
			t := time.NewTimer(time.Until(log.start.Add(time.Duration(sec+1) * time.Second)))
			select {
			case <-ctx.Done():
				t.Stop()
				read(sec)
				return
			case <-t.C:
			}
			read(sec)
		}
	}()
	return func() { cancel(); <-done }
}

// addServedN counts n calls served by replica in second sec.
func (l *serveLog) addServedN(sec int, replica string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts := l.served[replica]
	for len(counts) <= sec {
		counts = append(counts, 0)
	}
	counts[sec] += n
	l.served[replica] = counts
}

// dropServed forgets the calls counted for replica.
func (l *serveLog) dropServed(replica string) {
	l.mu.Lock()
	delete(l.served, replica)
	l.mu.Unlock()
}
