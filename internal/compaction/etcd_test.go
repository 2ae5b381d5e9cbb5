package compaction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/cluster"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
)

// shared is the package's one-member etcd (nil when etcd is not
// installed: the tests then fail with CI=true, skip otherwise).
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { etcdtest.Main(m, &shared) }

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var prefixes atomic.Int64

func newPrefix(t *testing.T) string {
	return fmt.Sprintf("/compaction-%d-%s/", prefixes.Add(1), strings.ReplaceAll(t.Name(), "/", "-"))
}

func newClient(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func openDir(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix, name string, ttl time.Duration) *cluster.Directory {
	t.Helper()
	d, err := cluster.Open(ctx, cluster.Options{Client: cli, Prefix: prefix, SessionTTL: ttl, Logger: slog.New(slog.DiscardHandler),
		Self: cluster.Entry{Name: name, AdminURL: "http://" + name + ".example:7070", Started: time.Now(), Version: "test"}})
	if err != nil {
		t.Fatalf("open directory %s: %v", name, err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

// names are the live instances d knows.
func names(d *cluster.Directory) []string {
	var out []string
	for _, in := range d.Instances() {
		out = append(out, in.Name)
	}
	return out
}

// awaitView waits until d's view satisfies ok.
func awaitView(ctx context.Context, t *testing.T, d *cluster.Directory, what string, ok func([]string) bool) {
	t.Helper()
	for {
		ch := d.Changed()
		if ok(names(d)) {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s: the directory lists %v", what, names(d))
		}
	}
}

func startPublisher(t *testing.T, o PublisherOptions) *Publisher {
	t.Helper()
	o.Logger = slog.New(slog.DiscardHandler)
	p, err := StartPublisher(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestCompactsBelowEveryNeed: with two live instances, nothing is
// compacted while one has not published; once both have, etcd is
// compacted to the lowest revision they need (captured a period before),
// not above; each published key is on its instance's directory lease and
// goes with it.
func TestCompactsBelowEveryNeed(t *testing.T) {
	etcdtest.Need(t)
	ctx := ctxT(t, 30*time.Second)
	cli := newClient(t, shared.Endpoints()...)
	prefix := newPrefix(t)
	a := openDir(ctx, t, cli, prefix, "a", 10*time.Second)
	b := openDir(ctx, t, cli, prefix, "b", 10*time.Second)
	awaitView(ctx, t, a, "a sees b", func(n []string) bool { return slices.Contains(n, "b") })

	first, err := cli.Put(ctx, prefix+"marker", "1")
	if err != nil {
		t.Fatal(err)
	}
	need := first.Header.Revision // a's watches need history from here
	var na Needs
	na.Add(func() (int64, bool) { return need, true })
	pa := startPublisher(t, PublisherOptions{Client: cli, Prefix: prefix, Instance: "a", Lease: a.Lease, Needs: &na, Every: 20 * time.Millisecond})

	steps := make(chan Decision, 64)
	m := NewMetrics()
	const period = 200 * time.Millisecond
	run, err := StartRunner(RunnerOptions{Client: cli, Prefix: prefix, Every: period, Live: func() []string { return names(a) }, Leading: func() bool { return true },
		Metrics: m, Logger: slog.New(slog.DiscardHandler), OnStep: func(d Decision, err error) {
			if err != nil {
				t.Errorf("runner step: %v", err)
			}
			select {
			case steps <- d:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	next := func() Decision {
		t.Helper()
		select {
		case d := <-steps:
			return d
		case <-ctx.Done():
			t.Fatal("no runner step")
			return Decision{}
		}
	}
	// Two periods of steps: b blocks every one.
	for range 8 {
		if d := next(); d.Compact || !strings.Contains(d.Reason, `"b" has not published`) {
			t.Fatalf("step while b has not published: %+v", d)
		}
	}
	for i := range 5 {
		if _, err := cli.Put(ctx, prefix+"marker", fmt.Sprint(i+2)); err != nil {
			t.Fatal(err)
		}
	}
	var nb Needs // b runs no watch: it needs etcd's revision
	startPublisher(t, PublisherOptions{Client: cli, Prefix: prefix, Instance: "b", Lease: b.Lease, Needs: &nb, Every: 20 * time.Millisecond})
	var d Decision
	for !d.Compact {
		d = next()
	}
	if d.Rev != need {
		t.Fatalf("compacted to %d, want %d: the lowest revision needed (a's)", d.Rev, need)
	}
	for run.Revision() != need { // set right after the step's report
		select {
		case <-ctx.Done():
			t.Fatalf("Revision %d, want %d", run.Revision(), need)
		case <-steps:
		}
	}
	var gauge dto.Metric
	if err := m.revision.Write(&gauge); err != nil || gauge.GetGauge().GetValue() != float64(need) {
		got := gauge.GetGauge().GetValue()
		t.Errorf("fulcrum_store_etcd_compacted_revision = %v, want %d", got, need)
	}
	if _, err := cli.Get(ctx, prefix+"marker", clientv3.WithRev(need-1)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("read at %d, below the compaction: %v, want ErrCompacted", need-1, err)
	}
	if _, err := cli.Get(ctx, prefix+"marker", clientv3.WithRev(need)); err != nil {
		t.Errorf("read at %d, the revision needed: %v", need, err)
	}
	if rev, ok := pa.Published(); !ok || rev != need {
		t.Errorf("a published %d, %v; want %d", rev, ok, need)
	}
	for _, in := range []struct {
		name string
		d    *cluster.Directory
	}{{"a", a}, {"b", b}} {
		resp, err := cli.Get(ctx, Key(prefix, in.name))
		if err != nil || len(resp.Kvs) != 1 || clientv3.LeaseID(resp.Kvs[0].Lease) != in.d.Lease() {
			t.Fatalf("%s's key: %+v, %v; want one key on its directory lease %x", in.name, resp, err, in.d.Lease())
		}
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, err := cli.Get(ctx, Key(prefix, "b")); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("b's key after b closed: %+v, %v; want it gone with its lease", resp, err)
	}
}
