package balancer

import (
	"math"
	"net"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// This file is what the balancer does for tcp groups beyond building their
// front door (frontdoor.go): the drain timeout of open connections, the
// client counts the strategies see, and the clients the analyzer plans
// moves of.

// tcpClientsLocked sets, in a tcp group, the reported replica rep's
// Clients to its open connections in the group's connection table: the
// replicas' agents see only the balancer's connections, not the clients
// behind it, and an adaptive strategy's automatic per-balance load (the
// load one more connection adds) is the reported load over these. (The
// analyzer's per-client lists are the client addresses instead:
// tcpReportClientsLocked.) Caller holds g.mu.
func (g *group) tcpClientsLocked(rep *strategy.Replica) {
	if g.spec.Protocol == protocol.ProtocolTCP && rep.Reported {
		rep.Clients = g.conns.OpenTo(rep.ID)
	}
}

// drainConnsLocked closes, in a tcp group, the open connections of
// replicas that have been draining (or being removed) for longer than
// tcp.drain_timeout, and those of replicas no longer in the group. New
// connections never go to a draining replica (it is not eligible); the
// open ones may finish on their own until then. g.tcpDrain keeps when each
// replica was first seen draining, at the resolution of the group's
// steps. Caller holds g.mu.
func (g *group) drainConnsLocked(now time.Time) {
	if g.spec.Protocol != protocol.ProtocolTCP {
		return
	}
	if g.tcpDrain == nil {
		g.tcpDrain = map[string]time.Time{}
	}
	timeout := g.spec.TCP.DrainTimeout.D()
	expired := map[string]bool{}
	for _, m := range g.order {
		id := m.rec.ID
		if !m.rec.Draining && !m.rec.Removing {
			delete(g.tcpDrain, id)
			continue
		}
		since, ok := g.tcpDrain[id]
		if !ok {
			g.tcpDrain[id], since = now, now
		}
		if now.Sub(since) >= timeout {
			expired[id] = true
		}
	}
	for id := range g.tcpDrain {
		if g.members[id] == nil {
			delete(g.tcpDrain, id)
		}
	}
	for id := range g.tcpMarks {
		if g.members[id] == nil {
			delete(g.tcpMarks, id)
		}
	}
	for _, e := range g.conns.Entries() {
		if expired[e.Replica] || g.members[e.Replica] == nil {
			if e.Close() {
				g.b.log.Info("tcp connection closed: its replica's drain timeout passed", "group", g.name, "replica", e.Replica, "client", e.Client)
			}
		}
	}
}

// tcpMovesClients tells whether group gs's clients are its connection
// table's client addresses, which the analyzer plans moves of
// (tcpReportClientsLocked; groupcore's MoveClients and ClientRatesInLoad):
// tcp groups, on a single node. In a cluster an instance's table holds
// only its own connections while a replica's load is the one from every
// instance, so tcp groups there plan no moves, as before.
func (b *Balancer) tcpMovesClients(gs protocol.Group) bool {
	return gs.Protocol == protocol.ProtocolTCP && b.opts.Leadership == nil
}

// tcpMark is a tcp replica's traffic at its last report: its bytes both
// ways, closed connections included, and each open connection's, by
// connection table entry.
type tcpMark struct {
	total uint64
	conns map[uint64]uint64
}

// tcpReportClientsLocked sets, in a tcp group, the clients of replica id's
// report rep to the client addresses of its open connections, each with
// its share of the replica's traffic since the replica's previous report
// times the report's load (groupcore's ClientRatesInLoad): the agent
// behind the balancer sees only the balancer's connections, so the
// clients it lists are dropped, and the analyzer plans moves of client
// addresses, which the front door carries out at their next connection.
//
// The share is of bytes both ways, not of connections: the load an agent
// measures (CPU) follows the traffic, and an idle connection held open
// costs the replica next to nothing, so moving it would free nothing.
// Both counts come from the connection table's counters; the replica's
// total includes the connections that closed meanwhile, so their bytes
// are no open client's. Clients that sent and received nothing since are
// not listed.
//
// Only where the balancer moves tcp clients (tcpMovesClients). Caller
// holds g.mu.
func (g *group) tcpReportClientsLocked(id string, rep *protocol.Report) {
	if !g.b.tcpMovesClients(g.spec) {
		return
	}
	if g.tcpMarks == nil {
		g.tcpMarks = map[string]*tcpMark{}
	}
	prev := g.tcpMarks[id]
	if prev == nil {
		prev = &tcpMark{}
	}
	tot := g.conns.Totals()[id]
	next := &tcpMark{total: tot.BytesIn + tot.BytesOut, conns: map[uint64]uint64{}}
	byClient := map[string]uint64{}
	for _, e := range g.conns.Entries() {
		if e.Replica != id {
			continue
		}
		n := e.BytesIn() + e.BytesOut()
		next.conns[e.ID] = n
		byClient[clientHost(e.Client)] += growth(n, prev.conns[e.ID])
	}
	g.tcpMarks[id] = next
	rep.Clients = connectionRates(rep.Load, growth(next.total, prev.total), byClient)
}

// growth is the growth of a counter from prev to n (n itself when the
// counter started again).
func growth(n, prev uint64) uint64 {
	if n < prev {
		return n
	}
	return n - prev
}

// clientHost is the address part of a connection table entry's client
// (host:port).
func clientHost(client string) string {
	if host, _, err := net.SplitHostPort(client); err == nil {
		return host
	}
	return client
}

// connectionRates turns the bytes each client address moved since a
// replica's previous report into rates in the load's unit: load times the
// client's share of total, the replica's bytes over the same span (at
// least the clients' sum). Busiest first, at most
// protocol.MaxReportClients; clients with no bytes, or a load that is not
// a positive finite number, list nothing.
func connectionRates(load float64, total uint64, byClient map[string]uint64) []protocol.ClientRate {
	if !(load > 0) || math.IsInf(load, 1) {
		return nil
	}
	var sum uint64
	for _, n := range byClient {
		sum += n
	}
	total = max(total, sum)
	if total == 0 {
		return nil
	}
	out := make([]protocol.ClientRate, 0, len(byClient))
	for c, n := range byClient {
		if n > 0 {
			out = append(out, protocol.ClientRate{ID: c, Rate: load * float64(n) / float64(total)})
		}
	}
	return busiest(out) // workercombine.go
}
