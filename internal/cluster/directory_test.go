package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// shared is the package's one-member etcd (nil when etcd is not
// installed: the tests then fail with CI=true, skip otherwise).
var shared *etcdtest.Cluster

func TestMain(m *testing.M) { etcdtest.Main(m, &shared) }

var prefixes atomic.Int64

// newPrefix is a prefix no other test uses.
func newPrefix(t *testing.T) string {
	return fmt.Sprintf("/test-%d-%s/", prefixes.Add(1), strings.ReplaceAll(t.Name(), "/", "-"))
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// client is a client of the shared etcd, closed at cleanup.
func client(t *testing.T) *clientv3.Client {
	t.Helper()
	etcdtest.Need(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: shared.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// open opens name's directory entry under prefix, closed at cleanup.
func open(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix, name string, ttl time.Duration) *Directory {
	t.Helper()
	d, err := Open(ctx, Options{Client: cli, Prefix: prefix, SessionTTL: ttl, Self: Entry{Name: name, AdminURL: "http://" + name + ".example:7070", Started: time.Now(), Version: "test"}})
	if err != nil {
		t.Fatalf("Open %s: %v", name, err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

// waitFor waits on d's view until cond holds, and fails the test when ctx
// ends first.
func waitFor(ctx context.Context, t *testing.T, d *Directory, what string, cond func([]protocol.ClusterInstance) bool) {
	t.Helper()
	for {
		ch := d.Changed()
		if cond(d.Instances()) {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s: %s not seen: %+v", d.Name(), what, d.Instances())
		}
	}
}

func has(name string) func([]protocol.ClusterInstance) bool {
	return func(ins []protocol.ClusterInstance) bool {
		for _, in := range ins {
			if in.Name == name {
				return true
			}
		}
		return false
	}
}

func not(f func([]protocol.ClusterInstance) bool) func([]protocol.ClusterInstance) bool {
	return func(ins []protocol.ClusterInstance) bool { return !f(ins) }
}

// Two instances see each other, with their front doors; one that closes
// is gone from the other's view at once (its lease revoked), well before
// its TTL.
func TestTwoInstancesSeeEachOther(t *testing.T) {
	t.Parallel()
	cli := client(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := newPrefix(t)
	a := open(ctx, t, cli, prefix, "a", 2*time.Second)
	b := open(ctx, t, cli, prefix, "b", 10*time.Second)
	b.SetFrontDoors(map[string]protocol.FrontDoorBinding{"prime": {Address: "127.0.0.2:8000"}, "broken": {Error: "address in use"}})
	waitFor(ctx, t, a, "b with its front doors", func(ins []protocol.ClusterInstance) bool {
		for _, in := range ins {
			if in.Name == "b" && !in.Self && in.AdminURL == "http://b.example:7070" && in.FrontDoors["prime"].Address == "127.0.0.2:8000" && in.FrontDoors["broken"].Error == "address in use" {
				return true
			}
		}
		return false
	})
	if url, ok := a.AdminURL("b"); !ok || url != "http://b.example:7070" {
		t.Errorf("a.AdminURL(b) = %q, %v", url, ok)
	}
	waitFor(ctx, t, b, "a", has("a"))
	ins := a.Instances()
	if len(ins) != 2 || ins[0].Name != "a" || !ins[0].Self || ins[1].Self {
		t.Errorf("a.Instances() = %+v, want a (self) then b", ins)
	}

	closed := time.Now()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithTimeout(ctx, 5*time.Second) // b's TTL is 10 s
	defer cancel()
	waitFor(gone, t, a, "b gone", not(has("b")))
	t.Logf("b's entry gone from a's view %v after b closed", time.Since(closed).Round(time.Millisecond))
	if _, ok := a.AdminURL("b"); ok {
		t.Error("a.AdminURL(b) still known after b closed")
	}
}

// A name held by a live instance: Open waits for about the holder's TTL
// and fails naming the holder's admin URL.
func TestNameHeldByLiveInstance(t *testing.T) {
	t.Parallel()
	cli := client(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := newPrefix(t)
	const ttl = 2 * time.Second
	open(ctx, t, cli, prefix, "same", ttl)
	start := time.Now()
	d, err := Open(ctx, Options{Client: cli, Prefix: prefix, SessionTTL: ttl, Self: Entry{Name: "same", AdminURL: "http://other.example:7070"}})
	took := time.Since(start)
	var nt *NameTakenError
	if !errors.As(err, &nt) {
		if d != nil {
			_ = d.Close(ctx)
		}
		t.Fatalf("second Open of a held name: %v, want a *NameTakenError", err)
	}
	if nt.AdminURL != "http://same.example:7070" || !strings.Contains(err.Error(), "http://same.example:7070") {
		t.Errorf("error %q does not name the holder's admin URL", err)
	}
	if took < ttl {
		t.Errorf("refused after %v, before the holder's TTL %v", took, ttl)
	}
	if took > ttl+ExpiryGrace+2*time.Second {
		t.Errorf("refused after %v, long after the holder's TTL %v", took, ttl)
	}
}

// A name whose holder stopped keeping its lease alive (killed) is taken
// once that lease expires.
func TestNameOfDeadHolderTaken(t *testing.T) {
	t.Parallel()
	cli := client(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := newPrefix(t)
	// A killed instance: its entry on a lease nobody keeps alive.
	g, err := cli.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, Key(prefix, "same"), `{"name":"same","admin_url":"http://dead.example:7070"}`, clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	open(ctx, t, cli, prefix, "same", 2*time.Second)
	resp, err := cli.Get(ctx, Key(prefix, "same"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("entry after Open: %v, %v", resp, err)
	}
	if e, err := DecodeEntry(prefix, string(resp.Kvs[0].Key), resp.Kvs[0].Value); err != nil || e.AdminURL != "http://same.example:7070" || clientv3.LeaseID(resp.Kvs[0].Lease) == g.ID {
		t.Errorf("entry after Open = %+v (lease %x), %v; want the new instance's on its own lease", e, resp.Kvs[0].Lease, err)
	}
}

// A key under instances/ that cannot be decoded is skipped; the entries
// around it are seen.
func TestUndecodableEntrySkipped(t *testing.T) {
	t.Parallel()
	cli := client(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := newPrefix(t)
	if _, err := cli.Put(ctx, prefix+InstancesDir+"junk", "not json"); err != nil {
		t.Fatal(err)
	}
	a := open(ctx, t, cli, prefix, "a", 2*time.Second)
	if _, err := cli.Put(ctx, prefix+InstancesDir+"junk2", `{"name":"someone-else"}`); err != nil {
		t.Fatal(err)
	}
	open(ctx, t, cli, prefix, "b", 2*time.Second)
	waitFor(ctx, t, a, "b", has("b"))
	for _, in := range a.Instances() {
		if strings.HasPrefix(in.Name, "junk") || in.Name == "someone-else" {
			t.Errorf("undecodable key listed: %+v", in)
		}
	}
}

// An entry whose lease is lost (revoked from outside, as an expiry would)
// is registered again on a new lease, with its current front doors.
func TestLostLeaseRegistersAgain(t *testing.T) {
	t.Parallel()
	cli := client(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := newPrefix(t)
	a := open(ctx, t, cli, prefix, "a", 2*time.Second)
	a.SetFrontDoors(map[string]protocol.FrontDoorBinding{"prime": {Address: "127.0.0.1:8000"}})
	obs := open(ctx, t, cli, prefix, "observer", 2*time.Second)
	waitFor(ctx, t, obs, "a's front door", func(ins []protocol.ClusterInstance) bool {
		for _, in := range ins {
			if in.Name == "a" && in.FrontDoors["prime"].Address == "127.0.0.1:8000" {
				return true
			}
		}
		return false
	})
	resp, err := cli.Get(ctx, Key(prefix, "a"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("a's entry: %v, %v", resp, err)
	}
	old := clientv3.LeaseID(resp.Kvs[0].Lease)
	if _, err := cli.Revoke(ctx, old); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, obs, "a gone", not(has("a")))
	waitFor(ctx, t, obs, "a back with its front door", func(ins []protocol.ClusterInstance) bool {
		for _, in := range ins {
			if in.Name == "a" && in.FrontDoors["prime"].Address == "127.0.0.1:8000" {
				return true
			}
		}
		return false
	})
	resp, err = cli.Get(ctx, Key(prefix, "a"))
	if err != nil || len(resp.Kvs) != 1 || clientv3.LeaseID(resp.Kvs[0].Lease) == old {
		t.Fatalf("a's entry after the lost lease: %v, %v; want it on a new lease", resp, err)
	}
}

// Health: the shared member answers (reachable, version, leader of its
// one-member cluster, a database size); a closed port does not, with the
// error.
func TestHealth(t *testing.T) {
	t.Parallel()
	cli := client(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	eps := append(shared.Endpoints(), dead)
	hs := Health(ctxT(t, 10*time.Second), cli, eps, 500*time.Millisecond)
	if len(hs) != 2 {
		t.Fatalf("Health = %+v, want 2 endpoints", hs)
	}
	if h := hs[0]; !h.Reachable || h.Version == "" || !h.Leader || h.DBSize <= 0 || h.Error != "" || h.Endpoint != eps[0] {
		t.Errorf("live member: %+v, want reachable, version, leader, db size", h)
	}
	if h := hs[1]; h.Reachable || h.Error == "" || h.Endpoint != dead {
		t.Errorf("closed port: %+v, want unreachable with an error", h)
	}
}
