package effectiveness

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// HTTPRun is one effectiveness run over HTTP against a group that another
// experiment set up (bench cluster: a group served by three instances):
// the same open-loop clients on the same schedule as the effectiveness
// experiment's runs, and the same figures and verdict (EffRow). The group
// and its replicas are the caller's; only the clients are the run's.
type HTTPRun struct {
	// Strategy and Binding are the group's, for the row and the verdict.
	Strategy, Binding string
	// Rates are the clients' rates in start order (see Interleave).
	Rates []float64
	// Doors returns client i's front doors: the client calls the first
	// and, when there are several, is given them all
	// (client.Options.FrontDoors), so that it goes on through the first
	// while it answers.
	Doors func(i int) []string
	// Replicas are the group's replica ids in registration order.
	Replicas []string
	// Duration is the run's length, whole seconds, at least 1s.
	Duration time.Duration
}

// HTTPResult is what an HTTPRun measured.
type HTTPResult struct {
	// Row is the run's figures and verdict, as the effectiveness
	// experiment's rows.
	Row EffRow
	// Rebinds is the clients' binding changes over the whole run (the
	// row's RebindsPerS counts the steady window only).
	Rebinds int
	// Stray counts calls answered by replicas not in Replicas.
	Stray int
	// Failures describes the failed calls, most frequent first; "" none.
	Failures string

	run    effRun
	trace  effTrace
	figure effFigures
}

// ClientGap separates the clients' starts, in their start order.
const ClientGap = effClientGap

// Interleave returns rates in the effectiveness experiment's start order:
// the first half and the second half alternately (100,50,100,50,... for
// its defaults).
func Interleave(rates []float64) []float64 { return interleave(rates) }

// DefaultRates are the effectiveness experiment's default client rates
// (the TAO paper's: four clients at 100 calls/s and four at 50), in the
// order they are given (Interleave gives the start order).
func DefaultRates() []float64 { return slices.Clone(defaultEffRates) }

// Measure runs the clients and computes the run's figures. size is the
// bench's size, for the verdict's wording of a run too short to judge.
func (h HTTPRun) Measure(ctx context.Context, size bench.Size) (HTTPResult, error) {
	dur := h.Duration.Truncate(time.Second)
	switch {
	case dur < time.Second:
		return HTTPResult{}, &protocol.FieldError{Field: "duration", Value: h.Duration.String(), Allowed: "at least 1s"}
	case len(h.Rates) == 0 || h.Doors == nil:
		return HTTPResult{}, fmt.Errorf("bench: effectiveness over HTTP: no clients (%d rates, doors %v)", len(h.Rates), h.Doors != nil)
	case len(h.Replicas) == 0:
		return HTTPResult{}, fmt.Errorf("bench: effectiveness over HTTP: no replicas")
	}
	r := effRun{Strategy: h.Strategy, Binding: h.Binding}
	clients := make([]*pacedClient, len(h.Rates))
	for i, rate := range h.Rates {
		doors := h.Doors(i)
		if len(doors) == 0 {
			return HTTPResult{}, fmt.Errorf("bench: effectiveness over HTTP: client %d has no front door", i)
		}
		c, closeIdle := newEffClient(doors, h.Binding, rate)
		defer closeIdle()
		clients[i] = c
	}
	log := driveClients(ctx, clients, dur, nil)
	if err := ctx.Err(); err != nil {
		return HTTPResult{}, err
	}
	tr, stray := log.snapshot(h.Replicas, int(dur/time.Second))
	rec, lag := mergedRecorders(clients)
	mix := newEffMix(h.Rates, len(h.Replicas))
	row := mix.row(r, tr, rec, dur, size)
	lags := lag.Summary()
	row.SendLagP50, row.SendLagP99 = lags.P50, lags.P99
	res := HTTPResult{Row: row, Stray: stray, Failures: log.errorKinds(), run: r, trace: tr,
		figure: analyseTrace(tr, stats.DefaultBand, stats.DefaultWindow)}
	for _, n := range tr.Rebinds {
		res.Rebinds += n
	}
	return res, nil
}

// WriteRates writes the run's per-second rates to NAME.csv and their
// plot, titled title, to NAME.png in the bench's output directory, as the
// effectiveness experiment writes each of its runs'.
func (r HTTPResult) WriteRates(env *bench.Env, name, title string) error {
	return writeRates(env, name, title, r.trace, r.figure)
}

// FormatRates shows rates as the effectiveness report does: 150/150/148/152.
func FormatRates(rs []float64) string { return joinRates(rs) }
