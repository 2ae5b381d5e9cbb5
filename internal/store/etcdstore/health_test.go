package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// waitFor polls cond until it holds or ctx ends (then the test fails,
// saying what).
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within the test's time", what)
		case <-tick.C:
		}
	}
}

// gather returns the metrics of m by name.
func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// byOp returns the metric of family name whose op label is op.
func byOp(t *testing.T, mfs map[string]*dto.MetricFamily, name, op string) *dto.Metric {
	t.Helper()
	for _, m := range mfs[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "op" && l.GetValue() == op {
				return m
			}
		}
	}
	t.Fatalf("no %s{op=%q}", name, op)
	return nil
}

func gauge(mfs map[string]*dto.MetricFamily, name string) float64 {
	if mf := mfs[name]; mf != nil && len(mf.GetMetric()) == 1 {
		return mf.GetMetric()[0].GetGauge().GetValue()
	}
	return -1
}

// TestUnreachableAndBack stops the only etcd member under an open store
// with a watch: the store says it is unreachable (Unreachable, the
// fulcrum_store_up gauge) within its check's bound, its writes fail
// within the dial timeout with an error wrapping store.ErrUnavailable and
// naming etcd; once etcd is back it says so, writes work and the watch
// delivers them. The metrics count the requests and measure the watch
// lag.
func TestUnreachableAndBack(t *testing.T) {
	c := etcdtest.New(t, etcdtest.Options{Members: 1})
	m := NewMetrics()
	const dial = time.Second
	s, err := Open(ctxT(t), Options{Endpoints: c.Endpoints(), Prefix: newPrefix(t), DialTimeout: dial, ProbeInterval: 50 * time.Millisecond, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ch, err := s.Watch(ctxT(t), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "a", "1")
	if _, _, _, err := s.Txn(ctxT(t), []store.Cond{store.ValueIs("a", []byte("1"))}, []store.Op{store.Put("b", []byte("1"))}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.Txn(ctxT(t), nil, []store.Op{store.Delete("b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctxT(t), "a"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		recvT(t, ch)
	}
	if err := s.Unreachable(); err != nil {
		t.Fatalf("Unreachable with etcd up = %v", err)
	}
	mfs := gather(t, m)
	for _, op := range []string{"put", "txn", "delete"} {
		if got := byOp(t, mfs, "fulcrum_store_etcd_writes_total", op).GetCounter().GetValue(); got != 1 {
			t.Errorf("fulcrum_store_etcd_writes_total{op=%s} = %v, want 1", op, got)
		}
	}
	if got := byOp(t, mfs, "fulcrum_store_etcd_request_seconds", "txn").GetHistogram().GetSampleCount(); got < 3 {
		t.Errorf("txn latency samples = %d, want at least 3", got)
	}
	for _, op := range []string{"get", "watch_open"} {
		if got := byOp(t, mfs, "fulcrum_store_etcd_request_seconds", op).GetHistogram().GetSampleCount(); got < 1 {
			t.Errorf("%s latency samples = %d, want at least 1", op, got)
		}
	}
	if got := gauge(mfs, "fulcrum_store_up"); got != 1 {
		t.Errorf("fulcrum_store_up = %v with etcd up, want 1", got)
	}
	// The lag is measured: a check's revision delivered by the watch
	// (a progress notification, as nothing changes meanwhile).
	waitFor(t, ctxT(t), "a watch lag measured", func() bool {
		s.health.mu.Lock()
		defer s.health.mu.Unlock()
		return s.health.lastLag > 0
	})
	if lag := gauge(gather(t, m), "fulcrum_store_watch_lag_seconds"); lag <= 0 || lag > 1 {
		t.Errorf("fulcrum_store_watch_lag_seconds = %v with etcd up and idle, want in (0, 1]", lag)
	}

	c.Member(0).Stop()
	stopped := time.Now()
	waitFor(t, ctxT(t), "the store unreachable", func() bool { return s.Unreachable() != nil })
	if took, bound := time.Since(stopped), 50*time.Millisecond+dial+time.Second; took > bound {
		t.Errorf("known unreachable after %v, want within %v", took, bound)
	}
	err = s.Unreachable()
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "etcd at "+c.Endpoints()[0]) {
		t.Errorf("Unreachable = %v; want store.ErrUnavailable naming etcd at %s", err, c.Endpoints()[0])
	}
	if got := gauge(gather(t, m), "fulcrum_store_up"); got != 0 {
		t.Errorf("fulcrum_store_up = %v with etcd stopped, want 0", got)
	}
	start := time.Now()
	_, _, _, err = s.Txn(ctxT(t), nil, []store.Op{store.Put("a", []byte("2"))})
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "etcd at "+c.Endpoints()[0]) {
		t.Errorf("Txn with etcd stopped = %v; want store.ErrUnavailable naming etcd", err)
	}
	if took := time.Since(start); took > dial+time.Second {
		t.Errorf("Txn with etcd stopped took %v, want within the dial timeout %v", took, dial)
	}

	if err := c.Member(0).Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctxT(t), "the store reachable again", func() bool { return s.Unreachable() == nil })
	if got := gauge(gather(t, m), "fulcrum_store_up"); got != 1 {
		t.Errorf("fulcrum_store_up = %v with etcd back, want 1", got)
	}
	rev := put(t, s, "a", "3")
	for {
		r := recvT(t, ch)
		if r.Err != nil {
			t.Fatalf("watch after etcd came back: %v", r.Err)
		}
		if r.Rev == rev {
			break
		}
	}
}

func TestWriteOp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		conds []store.Cond
		ops   []store.Op
		want  string
	}{
		{"put", nil, []store.Op{store.Put("k", nil)}, "put"},
		{"delete", nil, []store.Op{store.Delete("k")}, "delete"},
		{"delete prefix", nil, []store.Op{store.DeletePrefix("k")}, "txn"},
		{"conditioned put", []store.Cond{store.ModRevIs("k", 0)}, []store.Op{store.Put("k", nil)}, "txn"},
		{"two ops", nil, []store.Op{store.Put("k", nil), store.Delete("j")}, "txn"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := writeOp(tt.conds, tt.ops); got != tt.want {
				t.Errorf("writeOp = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestUnreachableErrors: which errors say etcd could not answer.
func TestUnreachableErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"deadline", context.DeadlineExceeded, true},
		{"wrapped deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), true},
		{"grpc unavailable", status.Error(codes.Unavailable, "connection refused"), true},
		{"no leader", rpctypes.ErrNoLeader, true},
		{"leader lost", rpctypes.ErrTimeoutDueToLeaderFail, true},
		{"canceled", context.Canceled, false},
		{"compacted", rpctypes.ErrCompacted, false},
		{"permission", rpctypes.ErrPermissionDenied, false},
		{"not found", store.ErrNotFound, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := unreachable(tt.err); got != tt.want {
				t.Errorf("unreachable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestCallerDeadlineSaysNothing: a request ended by its caller's own
// deadline (shorter than the dial timeout) does not make etcd unreachable;
// one ended by the store's dial timeout does.
func TestCallerDeadlineSaysNothing(t *testing.T) {
	c := etcdtest.New(t, etcdtest.Options{Members: 1})
	s, err := Open(ctxT(t), Options{Endpoints: c.Endpoints(), Prefix: newPrefix(t), DialTimeout: time.Second, ProbeInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := c.Member(0).Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Member(0).Resume() })
	ctx, cancel := context.WithTimeout(ctxT(t), 100*time.Millisecond)
	defer cancel()
	if _, err := s.Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with the member frozen = %v, want the caller's deadline", err)
	}
	if err := s.Unreachable(); err != nil {
		t.Errorf("after a caller's deadline: Unreachable = %v, want nil", err)
	}
	if _, err := s.Get(ctxT(t), "k"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Get with the member frozen, no earlier deadline = %v, want store.ErrUnavailable", err)
	}
	if err := s.Unreachable(); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("after the dial timeout: Unreachable = %v, want store.ErrUnavailable", err)
	}
}
