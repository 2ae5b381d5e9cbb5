package effectiveness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// omniEffWarmup is the time an omniORB run gives its client processes to
// start, initialise their ORBs and resolve the group's reference before
// the first client's first call.
const omniEffWarmup = 1500 * time.Millisecond

// omniCall is a prime_client --per-call line.
type omniCall struct {
	Call   int64  `json:"call"`
	OK     bool   `json:"ok"`
	Error  string `json:"error"`
	Minor  string `json:"minor"`
	Us     int64  `json:"us"`
	LateUs int64  `json:"late_us"`
	Peer   string `json:"peer"`
}

// runOneOmniORB is runOne with omniORB C++ on both sides: a fresh balancer,
// Replicas omniORB C++ Prime servers each behind "fulcrum agent giop"
// (registered, reporting the server's call rate as load), and one omniORB
// C++ client process per rate on the group's corbaloc reference, paced on
// the same grid as the Go clients (client i from start + i×effClientGap,
// one call every 1/rate until the end). Each client prints a line per call:
// the call is counted in the second it was meant to be sent, for the
// replica whose agent answered it (per-request: from the balancer's
// counters, as in the Go runs); its latency counts from its intended send
// time; a change of the answering replica between a client's calls is a
// rebind.
func (x *Effectiveness) runOneOmniORB(ctx context.Context, env *bench.Env, r effRun, order []float64, dur time.Duration) (effTrace, *stats.Recorder, *stats.Recorder, error) {
	progs, err := env.OmniORB(ctx)
	if err != nil {
		return effTrace{}, nil, nil, err
	}
	b, err := env.StartBalancer(ctx, bench.GroupSpec{Name: effGroup, Binding: r.Binding, Strategy: r.Strategy, Protocol: bench.ProtocolGIOP})
	if err != nil {
		return effTrace{}, nil, nil, err
	}
	defer b.Proc.Stop(3 * time.Second)
	for i := range x.Replicas {
		s, err := env.StartOmniServer(ctx, progs, fmt.Sprintf("%s-server-%d", r.slug(), i+1))
		if err != nil {
			return effTrace{}, nil, nil, err
		}
		defer s.Stop(3 * time.Second)
		a, err := env.StartOmniAgent(ctx, fmt.Sprintf("%s-agent-%d", r.slug(), i+1), s.IOR, &bench.Join{Admin: b.Admin, Group: effGroup})
		if err != nil {
			return effTrace{}, nil, nil, err
		}
		defer a.Stop(3 * time.Second)
	}
	if err := b.WaitReady(ctx, effGroup, x.Replicas, true); err != nil {
		return effTrace{}, nil, nil, err
	}
	st, err := b.Group(ctx, effGroup)
	if err != nil {
		return effTrace{}, nil, nil, err
	}
	var ids []string
	for _, rep := range st.Replicas {
		ids = append(ids, rep.ID)
	}
	byAddr := giopAddrs(st)
	ref := b.Reference(effGroup)

	start := time.Now().Add(omniEffWarmup)
	end := start.Add(dur)
	log := newServeLog(start)
	type client struct {
		p     *bench.Proc
		out   bytes.Buffer
		start time.Time
		rate  float64
	}
	clients := make([]*client, len(order))
	for i, rate := range order {
		c := &client{start: start.Add(time.Duration(i) * effClientGap), rate: rate}
		calls := 0
		for intendedAt(c.start, rate, calls).Before(end) {
			calls++
		}
		args := []string{"--calls", strconv.Itoa(calls), "--rate", strconv.FormatFloat(rate, 'f', -1, 64), "--per-call",
			"--start-at", strconv.FormatInt(c.start.UnixMicro(), 10), "--arg", strconv.Itoa(effPrimeN), ref}
		p, err := env.Start(bench.ProcSpec{Name: env.UniqueName(fmt.Sprintf("%s-client-%d", r.slug(), i+1)), Path: progs.Client, Args: args, Stdout: &c.out})
		if err != nil {
			return effTrace{}, nil, nil, err
		}
		defer p.Stop(0)
		c.p = p
		clients[i] = c
	}
	stopSampling := func() {}
	if r.Binding == protocol.PerRequest {
		stopSampling = sampleProxied(ctx, b, log)
	}
	// Every client is done shortly after the end; one that is not has
	// hung (its calls time out after omniORB's own limits at worst).
	wait, cancel := context.WithDeadline(ctx, end.Add(time.Minute))
	defer cancel()
	procs := make([]*bench.Proc, len(clients))
	for i, c := range clients {
		procs[i] = c.p
	}
	bench.WaitExit(wait, procs)
	stopSampling()
	if err := ctx.Err(); err != nil {
		return effTrace{}, nil, nil, err
	}
	rec, lag := stats.NewRecorder(), stats.NewRecorder()
	for _, c := range clients {
		appendLog(c.p, c.out.Bytes())
		// Exit status 3: some calls failed, which the lines say.
		if ee := (*exec.ExitError)(nil); c.p.Err() != nil && !(errors.As(c.p.Err(), &ee) && ee.ExitCode() == 3) {
			return effTrace{}, nil, nil, fmt.Errorf("bench: %s: %v; see %s", c.p.Name, c.p.Err(), c.p.Log)
		}
		if err := countOmniCalls(c.out.Bytes(), c.start, c.rate, r.Binding, byAddr, log, rec, lag); err != nil {
			return effTrace{}, nil, nil, fmt.Errorf("bench: %s: %w; see %s", c.p.Name, err, c.p.Log)
		}
	}
	if r.Binding == protocol.PerRequest {
		log.dropServed(effViaFrontDoor)
	}
	tr, stray := log.snapshot(ids, int(dur/time.Second))
	if stray > 0 {
		env.Logf("effectiveness: %s: %d calls answered by replicas not in the group's list", r, stray)
	}
	if errs := log.errorKinds(); errs != "" {
		env.Logf("effectiveness: %s: failed calls: %s", r, errs)
	}
	return tr, rec, lag, nil
}

// intendedAt is when call k (from 0) of a client paced at rate from start
// is meant to be sent.
func intendedAt(start time.Time, rate float64, k int) time.Time {
	return start.Add(time.Duration(float64(k) * float64(time.Second) / rate))
}

// countOmniCalls reads a client's --per-call lines into log (served,
// failed, rebinds, each in the second its call was meant to be sent), rec
// (latencies from the intended send times) and lag (how late each call
// was sent). A per-request client's calls all come back from the front
// door: they are logged as effViaFrontDoor (the balancer's counters say
// where they went).
func countOmniCalls(out []byte, start time.Time, rate float64, binding string, byAddr map[string]string, log *serveLog, rec, lag *stats.Recorder) error {
	last := ""
	n := 0
	for _, line := range bytes.Split(out, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte(`{"call"`)) {
			continue
		}
		var c omniCall
		if err := json.Unmarshal(line, &c); err != nil {
			return fmt.Errorf("call line %.100q: %w", line, err)
		}
		if c.Call < 1 {
			return fmt.Errorf("call line %.100q: call number %d", line, c.Call)
		}
		n++
		intended := intendedAt(start, rate, int(c.Call-1))
		lag.Record(time.Duration(c.LateUs) * time.Microsecond)
		if !c.OK {
			log.addFailed(intended, errors.New(strings.TrimSpace("CORBA "+c.Error+" "+c.Minor)))
			continue
		}
		rec.Record(time.Duration(c.Us+c.LateUs) * time.Microsecond)
		if binding == protocol.PerRequest {
			log.addServed(intended, effViaFrontDoor)
			continue
		}
		hp := strings.TrimPrefix(c.Peer, "giop:tcp:")
		replica, ok := byAddr[hp]
		if !ok {
			replica = hp
		}
		log.addServed(intended, replica)
		if last != "" && replica != last {
			log.addRebind(intended)
		}
		last = replica
	}
	if n == 0 {
		return errors.New("no call lines")
	}
	return nil
}

// effOmniORBNote is the report's note on omniORB runs.
func effOmniORBNote(rep *bench.Report) {
	rep.Heading("With omniORB on both sides")
	rep.Para("The replicas are omniORB C++ Prime servers (`prime_server`, built from `internal/bench/omniorb/src`), each behind a side-car `fulcrum agent giop` "+
		"that registered the server's IOR rewritten to point at itself and reports the server's call rate as its load every 500 ms. "+
		"The clients are unmodified omniORB C++ client processes (`prime_client --rate R --per-call --start-at T`) calling `is_prime(%d)` on the group's `corbaloc:iiop:` reference: "+
		"omniORB follows LOCATION_FORWARD (at its first LocateRequest or call, and whenever an agent sends it back under a high advisory) and keeps the forwarded reference. "+
		"Each client makes one call at a time on a fixed grid (call k meant at its start + k/rate); a call that cannot be sent on time is sent at once, and its latency counts from its intended time. "+
		"A call is counted for the replica whose agent answered it (the `peer` of omniORB's reply), in the second it was meant to be sent; "+
		"a change of that replica between a client's calls is a rebind. In a `per-request` run the replicas' shares are read from the balancer's `proxied` counters once a second.", effPrimeN)
}

// appendLog adds out (a process's standard output, read by the bench) to
// the process's log, for the record; a log that cannot be written is left
// as it is.
func appendLog(p *bench.Proc, out []byte) {
	f, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(out)
}
