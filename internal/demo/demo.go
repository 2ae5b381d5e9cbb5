// Package demo runs the TAO paper's effectiveness experiment (§4.3) in one command: a
// balancer, N prime replicas as child processes and clients at fixed call
// rates on loopback, printing each replica's served rate every second until
// the loads reach equilibrium.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Options configure a demo run.
type Options struct {
	// Replicas is the number of prime replicas (default 4).
	Replicas int
	// Rates are the clients' call rates in calls/s, started in this order
	// (default 100,100,100,100,50,50,50,50).
	Rates []float64
	// Strategy and Binding of the group (default least-loaded, on-demand).
	Strategy, Binding string
	// Protocol is the group's protocol: http (default: replicas serve
	// GET /prime/{n}, clients use fulcrum's client library) or giop (Go
	// Prime servants over GIOP, clients with fulcrum's client ORB calling
	// the group's corbaloc reference; see giop.go).
	Protocol string
	// Duration bounds the run: the deadline for equilibrium in adaptive
	// mode (default 120s), the run time with a non-adaptive strategy or
	// per-session binding (default 60s).
	Duration time.Duration
	// Executable is the fulcrum binary the replicas run (default: this
	// process's).
	Executable string
	// Out receives the table; Log the balancer's log (default discarded).
	Out, Log io.Writer
	// Window is how long all replicas must stay within Band for
	// equilibrium (default 10s, ±10%).
	Window time.Duration
	Band   float64
	// Stay keeps the demo running once its result is known (balanced, not
	// balanced, or the run time over), still printing a row a second, so
	// that the dashboard stays live; Run returns that result when ctx
	// ends.
	Stay bool
}

// ErrNotBalanced is returned when equilibrium was not reached in time.
var ErrNotBalanced = errors.New("demo: loads did not reach equilibrium")

func (o *Options) defaults() error {
	if o.Replicas == 0 {
		o.Replicas = 4
	}
	if len(o.Rates) == 0 {
		o.Rates = []float64{100, 100, 100, 100, 50, 50, 50, 50}
	}
	if o.Strategy == "" {
		o.Strategy = "least-loaded"
	}
	if o.Binding == "" {
		o.Binding = protocol.OnDemand
	}
	if o.Protocol == "" {
		o.Protocol = protocol.ProtocolHTTP
	}
	if o.Protocol != protocol.ProtocolHTTP && o.Protocol != protocol.ProtocolGIOP {
		return &protocol.FieldError{Field: "--protocol", Value: o.Protocol, Allowed: "must be http or giop"}
	}
	if o.Window == 0 {
		o.Window = 10 * time.Second
	}
	if o.Band == 0 {
		o.Band = 0.10
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Replicas < 1 || o.Replicas > 64 {
		return &protocol.FieldError{Field: "--replicas", Value: o.Replicas, Allowed: "must be in [1,64]"}
	}
	if len(o.Rates) > 256 {
		return &protocol.FieldError{Field: "--rates", Value: len(o.Rates), Allowed: "at most 256 clients"}
	}
	for _, r := range o.Rates {
		if !(r > 0 && r <= 10000) {
			return &protocol.FieldError{Field: "--rates", Value: r, Allowed: "each rate must be in (0, 10000] calls/s"}
		}
	}
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("demo: cannot find the fulcrum executable: %w", err)
		}
		o.Executable = exe
	}
	return nil
}

// Adaptive reports whether the run waits for equilibrium (an on-demand
// group) rather than running for a fixed time.
func (o *Options) Adaptive() bool { return o.Binding == protocol.OnDemand }

// Run runs the demo until equilibrium (adaptive) or for Duration.
func Run(ctx context.Context, o Options) error {
	if err := o.defaults(); err != nil {
		return err
	}
	if o.Duration == 0 {
		o.Duration = 60 * time.Second
		if o.Adaptive() {
			o.Duration = 120 * time.Second
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	dir, err := os.MkdirTemp("", "fulcrum-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	log := slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	bal, adminURL, frontDoor, stop, err := startBalancer(dir, o, log)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(o.Out, "balancer: admin %s, front door %s (group prime, %s, %s, %s)\n", adminURL, frontDoor, o.Protocol, o.Binding, o.Strategy)
	fmt.Fprintf(o.Out, "dashboard: %s/ui/ (open it in a browser to watch the loads converge)\n", adminURL)

	fleet := newFleet(o.Executable, adminURL, o.Out, o.Log)
	fleet.giop = o.Protocol == protocol.ProtocolGIOP
	defer fleet.stopAll()
	for i := 0; i < o.Replicas; i++ {
		if err := fleet.start(ctx, i); err != nil {
			return err
		}
	}
	ids, err := waitRegistered(ctx, bal, o.Replicas)
	if err != nil {
		return err
	}

	band := o.Band
	if o.Adaptive() {
		weights := make([]float64, o.Replicas)
		for i := range weights {
			weights[i] = 1
		}
		_, best := strategy.OptimalAssignment(o.Rates, weights)
		if best > band {
			band = best + 0.02
			fmt.Fprintf(o.Out, "no assignment of these clients keeps every replica within ±%.0f%% of the mean; the best reachable spread is ±%.1f%%, so equilibrium means within ±%.1f%%\n", o.Band*100, best*100, band*100)
		}
	}

	tally := newTally()
	var clients *clientSet
	if o.Protocol == protocol.ProtocolGIOP {
		clients = startGIOPClients(ctx, frontDoor, o.Rates, tally, newReplicaNames(bal))
		if o.Binding == protocol.PerRequest {
			go sampleProxied(ctx, bal, tally)
		}
	} else {
		clients = startClients(ctx, frontDoor, o.Rates, tally)
	}
	defer clients.stop()

	return watch(ctx, o, ids, tally, fleet, band)
}

// startBalancer runs a balancer in this process with one group, "prime".
func startBalancer(dir string, o Options, log *slog.Logger) (*balancer.Balancer, string, string, func(), error) {
	st, err := boltstore.Open(dir)
	if err != nil {
		return nil, "", "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, "", "", nil, err
	}
	adminURL := "http://" + ln.Addr().String()
	b, err := balancer.New(balancer.Options{Store: st, Logger: log, AdminURL: adminURL})
	if err != nil {
		ln.Close()
		st.Close()
		return nil, "", "", nil, err
	}
	srv := &http.Server{Handler: api.New(b, api.Options{Logger: log}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
		_ = srv.Shutdown(ctx)
		st.Close()
	}
	health := protocol.Health{Path: "/healthz", Interval: protocol.Duration(time.Second), Timeout: protocol.Duration(500 * time.Millisecond)}
	if o.Protocol == protocol.ProtocolGIOP {
		health.Path = "" // GIOP replicas are probed with a LocateRequest
	}
	gs, _, err := b.PutGroup(protocol.Group{
		Name:           "prime",
		Protocol:       o.Protocol,
		FrontDoor:      "127.0.0.1:0",
		Binding:        o.Binding,
		Strategy:       o.Strategy,
		ReportInterval: protocol.Duration(500 * time.Millisecond),
		Health:         health,
	})
	if err != nil {
		stop()
		return nil, "", "", nil, err
	}
	frontDoor := gs.Advertise
	if o.Protocol == protocol.ProtocolGIOP {
		loc, err := registry.GroupCorbaloc(gs.Advertise, gs.Name)
		if err != nil {
			stop()
			return nil, "", "", nil, err
		}
		frontDoor = loc.String()
	}
	return b, adminURL, frontDoor, stop, nil
}

// waitRegistered waits until n replicas have registered and reported, and
// returns their ids in registration order.
func waitRegistered(ctx context.Context, b *balancer.Balancer, n int) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		st, err := b.Group("prime")
		if err != nil {
			return nil, err
		}
		ready := 0
		for _, r := range st.Replicas {
			if r.Load != nil { // a fresh report
				ready++
			}
		}
		if ready >= n {
			ids := make([]string, 0, len(st.Replicas))
			for _, r := range st.Replicas {
				ids = append(ids, r.ID)
			}
			return ids, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("demo: only %d of %d replicas registered and reported within 30s", ready, n)
		case <-t.C:
		}
	}
}

// watch prints the per-replica served rates once a second and decides when
// the run is over.
func watch(ctx context.Context, o Options, ids []string, tally *tally, fleet *fleet, band float64) error {
	eq := stats.NewEquilibrium(band, int(o.Window/time.Second))
	header := []string{"  t"}
	for _, id := range ids {
		header = append(header, fmt.Sprintf("%14s", id))
	}
	fmt.Fprintf(o.Out, "%s  %8s %7s  (calls/s served by each replica)\n", strings.Join(header, " "), "failed", "rebinds")
	t := time.NewTicker(time.Second)
	defer t.Stop()
	start := time.Now()
	tally.take() // start the first second now
	var result error
	decided := false
	// decide ends the run with err, or, with Stay, keeps it going until
	// ctx ends and then returns err.
	decide := func(err error) bool {
		decided, result = true, err
		if o.Stay {
			fmt.Fprintf(o.Out, "staying up until interrupted (Ctrl-C): the dashboard stays live\n")
		}
		return !o.Stay
	}
	for sec := 1; ; sec++ {
		select {
		case <-ctx.Done():
			if decided {
				return result
			}
			return ctx.Err()
		case <-t.C:
		}
		counts, failed, rebinds := tally.take()
		row := []string{fmt.Sprintf("%3d", sec)}
		rates := make([]float64, len(ids))
		for i, id := range ids {
			rates[i] = float64(counts[id])
			row = append(row, fmt.Sprintf("%14.0f", rates[i]))
		}
		fmt.Fprintf(o.Out, "%s  %8d %7d\n", strings.Join(row, " "), failed, rebinds)
		for _, ev := range fleet.events() {
			fmt.Fprintln(o.Out, ev)
		}
		if decided {
			continue
		}
		if o.Adaptive() {
			if done, began := eq.Add(rates); done {
				fmt.Fprintf(o.Out, "balanced after %d s (every replica within ±%.0f%% of the mean in rows %d to %d)\n", began, band*100, began+1, sec)
				if decide(nil) {
					return nil
				}
				continue
			}
		}
		if time.Since(start) >= o.Duration {
			if o.Adaptive() {
				fmt.Fprintf(o.Out, "not balanced within %s\n", o.Duration)
				if decide(ErrNotBalanced) {
					return ErrNotBalanced
				}
				continue
			}
			fmt.Fprintf(o.Out, "ran for %s with %s/%s\n", o.Duration, o.Strategy, o.Binding)
			if decide(nil) {
				return nil
			}
		}
	}
}

// tally counts calls served per replica, failures and rebinds.
type tally struct {
	mu      sync.Mutex
	counts  map[string]int
	failed  int
	rebinds int
}

func newTally() *tally { return &tally{counts: map[string]int{}} }

func (t *tally) served(id string) {
	t.mu.Lock()
	t.counts[id]++
	t.mu.Unlock()
}

func (t *tally) fail() {
	t.mu.Lock()
	t.failed++
	t.mu.Unlock()
}

func (t *tally) rebind() {
	t.mu.Lock()
	t.rebinds++
	t.mu.Unlock()
}

// take returns and resets the counts.
func (t *tally) take() (map[string]int, int, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, f, r := t.counts, t.failed, t.rebinds
	t.counts, t.failed, t.rebinds = map[string]int{}, 0, 0
	return c, f, r
}
