package bench

import (
	"context"
	"time"
)

// Join registers a replica with a balancer's group through its monitor.
type Join struct {
	// Admin is the balancer's admin API URL; several, comma-separated,
	// for a cluster's instances (the monitor tries them in order).
	Admin string
	// Group is the group to join.
	Group string
	// Token, when set, is the join or admin token to register with
	// (--join-token); none for a balancer without an admin token.
	Token string
}

// Replica is a running "fulcrum backend prime".
type Replica struct {
	// URL is the replica's base URL; over GIOP, its IOR.
	URL string
	// Proc is the process.
	Proc *Proc
}

// StartReplica starts a prime replica on a free loopback port. With a
// join it registers with the group and reports its load (the Go monitor
// library); without, it is the plain service (for direct calls, HAProxy,
// NGINX and static members). It returns once the replica answers
// /healthz (over GIOP: a LocateRequest and _non_existent).
func (e *Env) StartReplica(ctx context.Context, name string, join *Join) (*Replica, error) {
	args := []string{"backend", "prime", "--listen", "127.0.0.1:0"}
	if e.Protocol == ProtocolGIOP {
		args = append(args, "--giop")
	}
	if join != nil {
		args = append(args, "--register", join.Admin, "--group", join.Group)
		if join.Token != "" {
			args = append(args, "--join-token", join.Token)
		}
	}
	lines := make(chan string, 1)
	p, err := e.Start(ProcSpec{Name: e.UniqueName(name), Path: e.Binary, Args: args, FirstLine: lines})
	if err != nil {
		return nil, err
	}
	url, err := WaitLine(ctx, p, lines, "listening on ", 20*time.Second)
	if err != nil {
		p.Stop(0)
		return nil, err
	}
	wait := func() error { return WaitHTTP(ctx, p, url+"/healthz", 20*time.Second) }
	if e.Protocol == ProtocolGIOP {
		wait = func() error { return waitGIOP(ctx, p, url, 20*time.Second) }
	}
	if err := wait(); err != nil {
		p.Stop(0)
		return nil, err
	}
	e.Logf("replica %s: %s, pid %d", p.Name, url, p.Pid())
	return &Replica{URL: url, Proc: p}, nil
}
