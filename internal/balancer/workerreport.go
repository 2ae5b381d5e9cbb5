package balancer

import (
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/analyzer"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Reports of multi-process replicas (workerreg.go). Each worker pushes
// its own reports, naming its worker; the group's leader keeps the latest
// report of each worker of the replica (member.workers) and feeds the
// analyzer their combination (combineWorkers), leaving out workers whose
// last report is older than analyzer.StaleIntervals report intervals —
// the age at which the analyzer stops using a replica's report.
//
// The analyzer is fed once per report interval, as for any replica, not
// once per worker: only the report of the pacing worker (the lowest index
// among the fresh ones) feeds it, with the others' latest reports; the
// others' reports are kept for the next combination and answered the
// replica's current advisory. So the analyzer's dampening and its count
// of reports after a move keep their meaning, and a pacing worker that
// stops reporting is replaced by the next one once it goes stale.
//
// Every worker gets the same advisory (term, epoch, named clients); each
// sends back only the named clients it owns (protocol.WorkerOf). When a
// high advisory names no clients, each worker's shed is its part of the
// replica's (workerShed), so that the replica sheds once, not once per
// worker.
//
// The latest reports live in the leader's memory only: a new leader (or
// a restarted balancer) starts combining from the reports it receives,
// and its first combination may miss the workers that have not reported
// to it yet (at most one report interval).

// checkReportWorker checks a report's worker against the replica's
// registration: a multi-process replica's reports must name a worker of
// the registered count, a single-process replica's must not name one.
// Errors are *protocol.FieldError (400).
func checkReportWorker(rec protocol.Replica, r protocol.Report) error {
	switch {
	case r.Worker == nil && rec.Workers == 0:
		return nil
	case r.Worker == nil:
		return &protocol.FieldError{Field: "worker", Value: nil, Allowed: fmt.Sprintf(`is required: replica %s was registered with %d workers; each report names its worker {"index": i, "count": %d}`, rec.ID, rec.Workers, rec.Workers)}
	case rec.Workers == 0:
		return &protocol.FieldError{Field: "worker", Value: fmt.Sprintf("{index: %d, count: %d}", r.Worker.Index, r.Worker.Count), Allowed: fmt.Sprintf("must be left out: replica %s was registered without worker", rec.ID)}
	case r.Worker.Count != rec.Workers:
		return &protocol.FieldError{Field: "worker.count", Value: r.Worker.Count, Allowed: fmt.Sprintf("must be %d, the worker count replica %s was registered with", rec.Workers, rec.ID)}
	}
	return r.Worker.Validate() // index in [0, count)
}

// workerStale is the age at which a worker's last report drops out of
// its replica's combination. Caller holds g.mu.
func (g *group) workerStaleLocked() time.Duration {
	return analyzer.StaleIntervals * g.spec.ReportInterval.D()
}

// workerReportLocked keeps a worker's report (checked by
// checkReportWorker), feeds the combination to the analyzer when the
// worker paces the replica, and returns the worker's advisory, without
// the term. Caller holds g.mu and leads the group.
func (g *group) workerReportLocked(m *member, r protocol.Report) (protocol.Advisory, error) {
	now, stale := g.b.now(), g.workerStaleLocked()
	if m.workers == nil {
		m.workers = make(map[int]workerReport, m.rec.Workers)
	}
	m.workers[r.Worker.Index] = workerReport{at: now, rep: r}
	combined, fresh := combineWorkers(m.workers, now, stale)
	var (
		adv protocol.Advisory
		err error
	)
	if pacingWorker(m.workers, now, stale) == r.Worker.Index {
		if adv, err = g.feedReportLocked(m, combined); err != nil {
			return protocol.Advisory{}, err
		}
	} else {
		adv = g.core.Advisory(m.rec.ID)
	}
	if adv.Advisory == protocol.High && len(adv.Clients) == 0 {
		adv.Shed = workerShed(adv.Shed, r.Load, combined.Load, fresh)
	}
	return adv, nil
}

// pacingWorker is the lowest index among the workers whose last report
// is fresh at now (-1: none). Pure.
func pacingWorker(reports map[int]workerReport, now time.Time, stale time.Duration) int {
	pacer := -1
	for i, wr := range reports {
		if now.Sub(wr.at) <= stale && (pacer < 0 || i < pacer) {
			pacer = i
		}
	}
	return pacer
}

// workersStatusLocked is how many workers a multi-process replica has
// and how many reported within the staleness; nil for a single-process
// replica. Caller holds g.mu.
func (g *group) workersStatusLocked(m *member) *protocol.WorkersStatus {
	if m.rec.Workers == 0 {
		return nil
	}
	now, stale := g.b.now(), g.workerStaleLocked()
	ws := &protocol.WorkersStatus{Count: m.rec.Workers}
	for _, wr := range m.workers {
		if now.Sub(wr.at) <= stale {
			ws.Reporting++
		}
	}
	return ws
}
