package tcp

import (
	"context"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// opTimeout bounds one operation (an exchange, a transfer, a connection):
// a balancer that hangs fails the operation instead of the run.
const opTimeout = 10 * time.Second

// op is one operation of a closed-loop worker; an error ends the worker's
// state (its connection), which newWorker makes afresh.
type op func(ctx context.Context) error

// closedLoop runs n closed-loop workers against one arm: each repeats its
// operation back to back. They start together; operations that start
// within warmup are not measured, and no operation starts after
// warmup+window. The result's latencies are the measured operations', its
// Elapsed from the end of the warm-up to the end of the last measured
// operation. newWorker(i) makes worker i's operation and what closes its
// state.
func closedLoop(ctx context.Context, n int, warmup, window time.Duration, newWorker func(ctx context.Context, i int) (op, func(), error)) (bench.LoadResult, error) {
	workers := make([]worker, n)
	for i := range workers {
		do, closeFn, err := newWorker(ctx, i)
		if err != nil {
			for _, w := range workers[:i] {
				w.close()
			}
			return bench.LoadResult{}, err
		}
		workers[i] = worker{do, closeFn}
	}
	begin := time.Now()
	measureFrom := begin.Add(warmup)
	end := measureFrom.Add(window)
	recs := make([]*stats.Recorder, n)
	errs := make([]int64, n)
	firsts := make([]string, n)
	lasts := make([]time.Time, n)
	var wg sync.WaitGroup
	for i := range workers {
		recs[i] = stats.NewRecorder()
		wg.Go(func() {
			w := &workers[i]
			defer func() { w.close() }()
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				err := w.do(ctx)
				t1 := time.Now()
				if t0.Before(measureFrom) {
					if err != nil {
						w.reopen(ctx, i, newWorker)
					}
					continue
				}
				lasts[i] = t1
				if err != nil {
					errs[i]++
					if firsts[i] == "" {
						firsts[i] = err.Error()
					}
					w.reopen(ctx, i, newWorker)
					continue
				}
				recs[i].Record(t1.Sub(t0))
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return bench.LoadResult{}, err
	}
	res := bench.LoadResult{Rec: stats.Merge(recs...)}
	last := measureFrom
	for i := range n {
		res.Errors += errs[i]
		if res.FirstError == "" {
			res.FirstError = firsts[i]
		}
		if lasts[i].After(last) {
			last = lasts[i]
		}
	}
	res.Elapsed = last.Sub(measureFrom)
	return res, nil
}

// worker is one closed-loop worker: its operation and what closes its
// state.
type worker struct {
	do    op
	close func()
}

// reopen replaces a worker whose operation failed; when that fails too,
// the worker's next operation fails the same way (and is counted).
func (w *worker) reopen(ctx context.Context, i int, newWorker func(ctx context.Context, i int) (op, func(), error)) {
	w.close()
	do, closeFn, err := newWorker(ctx, i)
	if err != nil {
		w.do = func(context.Context) error { return err }
		w.close = func() {}
		return
	}
	w.do, w.close = do, closeFn
}
