package leader_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// ttl is the instances' session TTL in these tests.
const ttl = 2 * time.Second

// memberKilledTTL is the session TTL of the etcd-member-killed test.
const memberKilledTTL = 6 * time.Second

// TestEtcd runs instances (this test binary re-executed, child_test.go)
// against a real three-member etcd cluster and breaks things: the leader
// frozen, killed, an etcd member killed, every etcd member stopped.
func TestEtcd(t *testing.T) {
	c := etcdtest.New(t, etcdtest.Options{Members: 3})
	t.Run("frozen leader deposed, its writes refused", func(t *testing.T) { testFrozen(t, c) })
	t.Run("leader killed", func(t *testing.T) { testKilled(t, c) })
	t.Run("etcd member killed", func(t *testing.T) { testMemberKilled(t, c) })
	t.Run("every etcd member stopped", func(t *testing.T) { testAllStopped(t, c) })
}

var prefixes atomic.Int64

type instance struct {
	*proctest.Proc
	name string
}

// start runs an instance named name with session TTL sessionTTL (whole
// seconds); writer is "leader" or "zombie" (child_test.go).
func start(t *testing.T, c *etcdtest.Cluster, prefix, name, writer string, sessionTTL time.Duration) *instance {
	t.Helper()
	p := proctest.Start(t, "instance "+name, proctest.Options{Stdin: true, Env: []string{
		childEnv + "=" + name,
		"LEADER_ENDPOINTS=" + strings.Join(c.Endpoints(), ","),
		"LEADER_PREFIX=" + prefix,
		"LEADER_TTL=" + strconv.Itoa(int(sessionTTL/time.Second)),
		"LEADER_WRITER=" + writer,
	}}, os.Args[0], "-test.run=^$")
	return &instance{Proc: p, name: name}
}

// mark is how much the instance has written to stdout so far.
func (in *instance) mark() int { return len(in.Stdout.String()) }

// wait waits for a line matching re written after mark and returns its
// submatches and the mark after it.
func (in *instance) wait(ctx context.Context, t *testing.T, from int, re string) ([]string, int) {
	t.Helper()
	rx := regexp.MustCompile(re)
	for {
		s, changed := in.Stdout.Snapshot()
		if from <= len(s) {
			if loc := rx.FindStringSubmatchIndex(s[from:]); loc != nil {
				m := make([]string, len(loc)/2)
				for i := range m {
					if loc[2*i] >= 0 {
						m[i] = s[from+loc[2*i] : from+loc[2*i+1]]
					}
				}
				return m, from + loc[1]
			}
		}
		select {
		case <-changed:
		case <-in.Done():
			t.Fatalf("%s exited without writing %q; stdout:\n%s\nstderr:\n%s", in.name, re, in.Stdout, in.Stderr)
		case <-ctx.Done():
			t.Fatalf("%s did not write %q: %v; stdout:\n%s\nstderr:\n%s", in.name, re, ctx.Err(), tail(in.Stdout.String()), tail(in.Stderr.String()))
		}
	}
}

// count counts the lines matching re.
func (in *instance) count(re string) int {
	return len(regexp.MustCompile(re).FindAllString(in.Stdout.String(), -1))
}

// stop ends the instance through its stdin and waits for it.
func (in *instance) stop(ctx context.Context, t *testing.T) {
	t.Helper()
	_ = in.Stdin.Close()
	if code := in.Exit(ctx, t); code != 0 {
		t.Errorf("%s exited %d", in.name, code)
	}
}

func tail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newPrefix() string { return fmt.Sprintf("/leadertest-%d/", prefixes.Add(1)) }

func client(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// put is one write of the probe key in etcd's history.
type put struct {
	rev  int64
	inst string
	term int64
}

// history reads every put of the probe key under prefix from etcd's
// history (nothing is compacted in these tests).
func history(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string) []put {
	t.Helper()
	key := prefix + "kv/" + probeKey
	cur, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(cur.Kvs) == 0 {
		return nil
	}
	last := cur.Kvs[0].ModRevision // the key's last put: the watch reads up to it
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var puts []put
	for wr := range cli.Watch(wctx, key, clientv3.WithRev(1)) {
		if err := wr.Err(); err != nil {
			t.Fatalf("history of %s: %v", key, err)
		}
		for _, ev := range wr.Events {
			if ev.Type != mvccpb.PUT {
				continue
			}
			var p put
			var seq int
			if _, err := fmt.Sscanf(string(ev.Kv.Value), "%s term=%d seq=%d", &p.inst, &p.term, &seq); err != nil {
				t.Fatalf("history of %s: value %q at %d: %v", key, ev.Kv.Value, ev.Kv.ModRevision, err)
			}
			p.rev = ev.Kv.ModRevision
			puts = append(puts, p)
			if p.rev >= last {
				return puts
			}
		}
	}
	t.Fatalf("history of %s: watch ended: %v", key, ctx.Err())
	return nil
}

// termEnd is the revision at which the election key of term (its create
// revision) was deleted, from etcd's history of the election keys.
func termEnd(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string, term int64) int64 {
	t.Helper()
	root := prefix + "leaders/"
	cur, err := cli.Get(ctx, root, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	last := cur.Header.Revision
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var key string
	for wr := range cli.Watch(wctx, root, clientv3.WithPrefix(), clientv3.WithRev(1)) {
		if err := wr.Err(); err != nil {
			t.Fatalf("history of %s: %v", root, err)
		}
		for _, ev := range wr.Events {
			switch {
			case ev.Type == mvccpb.PUT && ev.Kv.CreateRevision == term:
				key = string(ev.Kv.Key)
			case ev.Type == mvccpb.DELETE && key != "" && string(ev.Kv.Key) == key:
				return ev.Kv.ModRevision
			}
			if ev.Kv.ModRevision >= last {
				t.Fatalf("the election key of term %d (%q) was never deleted up to revision %d", term, key, last)
			}
		}
	}
	t.Fatalf("history of %s: watch ended: %v", root, ctx.Err())
	return 0
}

// leaderOf returns the etcd member that leads the cluster.
func leaderOf(ctx context.Context, t *testing.T, c *etcdtest.Cluster, cli *clientv3.Client) *etcdtest.Member {
	t.Helper()
	for _, m := range c.Members() {
		st, err := cli.Status(ctx, m.ClientURL)
		if err == nil && st.Leader == st.Header.MemberId {
			return m
		}
	}
	t.Fatal("no etcd member says it leads")
	return nil
}

// elect starts instance a (writer) and waits until it leads and has
// written, then starts b (a leader-mode candidate) and waits until it
// campaigns. It returns them and a's term.
func elect(ctx context.Context, t *testing.T, c *etcdtest.Cluster, prefix, writer string, sessionTTL time.Duration) (a, b *instance, termA int64) {
	t.Helper()
	a = start(t, c, prefix, "a", writer, sessionTTL)
	m, _ := a.wait(ctx, t, 0, `change to=leader from=candidate term=(\d+)`)
	termA = atoi(t, m[1])
	a.wait(ctx, t, 0, `wrote term=`+m[1]+` `)
	b = start(t, c, prefix, "b", "leader", sessionTTL)
	b.wait(ctx, t, 0, `change to=candidate`)
	return a, b, termA
}

// testFrozen: the leader frozen (SIGSTOP) longer than the session TTL
// loses leadership; the other instance takes over with a higher term
// within 2 × TTL; after SIGCONT the old leader keeps writing through its
// old fence and etcd refuses every write: none of them is in the key's
// history after the new term began.
func testFrozen(t *testing.T, c *etcdtest.Cluster) {
	ctx := ctxFor(t, 60*time.Second)
	prefix := newPrefix()
	a, b, termA := elect(ctx, t, c, prefix, "zombie", ttl)

	mb := b.mark()
	frozen := time.Now()
	a.Signal(t, syscall.SIGSTOP)
	m, mb := b.wait(ctx, t, mb, `change to=leader from=candidate term=(\d+)`)
	took := time.Since(frozen)
	termB := atoi(t, m[1])
	t.Logf("b took over %v after a was frozen; terms a=%d b=%d", took, termA, termB)
	if took > 2*ttl {
		t.Errorf("b took over %v after a was frozen, want within 2 × TTL = %v", took, 2*ttl)
	}
	if termB <= termA {
		t.Errorf("b's term %d, want above a's %d", termB, termA)
	}
	_, mb = b.wait(ctx, t, mb, `wrote term=`+m[1]+` `)

	ma := a.mark()
	a.Signal(t, syscall.SIGCONT)
	a.wait(ctx, t, ma, fmt.Sprintf(`refused term=%d`, termA))
	// a learns of its loss from its session's end or from the watch
	// showing b's newer term, whichever comes first.
	a.wait(ctx, t, ma, fmt.Sprintf(`change to=deposed from=leader term=%d why=`, termA))
	// a keeps writing through its old fence; let a few more be refused
	// while b writes on.
	_, ma2 := a.wait(ctx, t, ma, fmt.Sprintf(`refused term=%d`, termA))
	a.wait(ctx, t, ma2, fmt.Sprintf(`refused term=%d`, termA))
	b.wait(ctx, t, mb, `wrote term=`+m[1]+` `)
	a.stop(ctx, t)
	b.stop(ctx, t)

	checkHistory(ctx, t, client(t, c), prefix, a, termA, termB)
	if n := a.count(fmt.Sprintf(`refused term=%d`, termA)); n < 2 {
		t.Errorf("a had %d writes refused after SIGCONT, want at least 2", n)
	}
}

// checkHistory asserts that every put of the old term (a's) precedes the
// new term's election key, that puts of the new term exist, and that
// etcd holds as many of a's puts as a saw succeed, give or take those
// whose outcome a did not learn.
func checkHistory(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string, a *instance, termA, termB int64) {
	t.Helper()
	puts := history(ctx, t, cli, prefix)
	// A term is its key's create revision, but the next leader's key may
	// be created (as a candidate's) while the old leader still writes:
	// the old term ends where its key is deleted, and no put of it may
	// land there or after.
	end := termEnd(ctx, t, cli, prefix, termA)
	var olds, news int
	for _, p := range puts {
		switch {
		case p.term == termA:
			olds++
			if p.inst != "a" || p.rev >= end {
				t.Errorf("a put of term %d by %s landed at revision %d, at or after the term ended (its election key deleted at %d)", termA, p.inst, p.rev, end)
			}
		case p.term == termB:
			news++
			if p.rev < end {
				t.Errorf("a put of term %d landed at revision %d, before term %d ended at %d", termB, p.rev, termA, end)
			}
		}
	}
	wrote := a.count(fmt.Sprintf(`wrote term=%d `, termA))
	failed := a.count(fmt.Sprintf(`failed term=%d `, termA))
	t.Logf("history: %d puts of term %d (a reported %d written, %d unknown), %d of term %d", olds, termA, wrote, failed, news, termB)
	if olds < wrote || olds > wrote+failed {
		t.Errorf("etcd holds %d puts of term %d; a reported %d written and %d of unknown outcome", olds, termA, wrote, failed)
	}
	if olds == 0 || news == 0 {
		t.Errorf("want puts of both terms in the history, got %d of %d and %d of %d", olds, termA, news, termB)
	}
}

// testKilled: the leader killed with kill -9; the other instance takes
// over with a higher term within 2 × TTL.
func testKilled(t *testing.T, c *etcdtest.Cluster) {
	ctx := ctxFor(t, 60*time.Second)
	prefix := newPrefix()
	a, b, termA := elect(ctx, t, c, prefix, "leader", ttl)
	mb := b.mark()
	killed := time.Now()
	a.Kill9(ctx, t)
	m, _ := b.wait(ctx, t, mb, `change to=leader from=candidate term=(\d+)`)
	took := time.Since(killed)
	t.Logf("b took over %v after a was killed", took)
	if took > 2*ttl {
		t.Errorf("b took over %v after a was killed, want within 2 × TTL = %v", took, 2*ttl)
	}
	if termB := atoi(t, m[1]); termB <= termA {
		t.Errorf("b's term %d, want above a's %d", termB, termA)
	}
	b.stop(ctx, t)
}

// testMemberKilled: etcd's leader member killed; the instance's
// leadership goes on: it still writes through its fence well after a
// session TTL, and nobody is deposed or elected.
func testMemberKilled(t *testing.T, c *etcdtest.Cluster) {
	ctx := ctxFor(t, 60*time.Second)
	prefix := newPrefix()
	cli := client(t, c)
	// A TTL well above etcd's election after its leader is killed (500 ms
	// election timeout, seconds on a machine loaded with other tests):
	// what is tested is that the lease is kept alive through the change
	// of etcd leader, not how fast etcd elects.
	const ttl = memberKilledTTL
	a, b, termA := elect(ctx, t, c, prefix, "leader", ttl)
	m := leaderOf(ctx, t, c, cli)
	killed := time.Now()
	m.Kill()
	t.Cleanup(func() {
		if !m.Running() {
			_ = m.Start()
		}
	})
	// a write of a's term that etcd acknowledged more than a TTL after
	// the kill: a's lease was kept alive through the change of etcd
	// leader.
	after := killed.Add(ttl + 500*time.Millisecond).UnixNano()
	from := a.mark()
	for {
		w, next := a.wait(ctx, t, from, fmt.Sprintf(`wrote term=%d rev=\d+ at=(\d+)`, termA))
		if atoi(t, w[1]) > after {
			break
		}
		from = next
	}
	if n := a.count(`change to=deposed`); n != 0 {
		t.Errorf("a was deposed %d times after etcd member %s was killed", n, m.Name)
	}
	if n := b.count(`change to=leader`); n != 0 {
		t.Errorf("b was elected %d times after etcd member %s was killed", n, m.Name)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	a.stop(ctx, t)
	b.stop(ctx, t)
}

// testAllStopped: every etcd member stopped; the leader steps down when
// its session expires (within 2 × TTL) and writes nothing more; when etcd
// returns an instance is elected again, with a higher term.
func testAllStopped(t *testing.T, c *etcdtest.Cluster) {
	ctx := ctxFor(t, 90*time.Second)
	prefix := newPrefix()
	a, b, termA := elect(ctx, t, c, prefix, "leader", ttl)
	ma, mb := a.mark(), b.mark()
	stopping := time.Now()
	for _, m := range c.Members() {
		m.Stop()
	}
	// etcd is gone once every member has exited: a member's graceful
	// stop can take seconds (its leader tries to hand leadership over
	// first), during which the others keep the leader's session alive.
	stopped := time.Now()
	t.Logf("every etcd member stopped within %v", stopped.Sub(stopping))
	t.Cleanup(func() {
		for _, m := range c.Members() {
			if !m.Running() {
				_ = m.Start()
			}
		}
	})
	_, ma = a.wait(ctx, t, ma, fmt.Sprintf(`change to=deposed from=leader term=%d why=session-lost`, termA))
	took := time.Since(stopped)
	t.Logf("a stepped down %v after etcd stopped", took)
	if took > 2*ttl {
		t.Errorf("a stepped down %v after etcd stopped, want within 2 × TTL = %v", took, 2*ttl)
	}
	deposedAt := ma
	for _, m := range c.Members() {
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	// Either instance may win now; a's old lease is revoked or expires.
	won := make(chan string, 2)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, in := range []*instance{a, b} {
		go func() {
			rx := regexp.MustCompile(`change to=leader from=candidate term=(\d+)`)
			from := mb
			if in == a {
				from = ma
			}
			for {
				s, changed := in.Stdout.Snapshot()
				if from <= len(s) {
					if m := rx.FindStringSubmatch(s[from:]); m != nil {
						won <- in.name + " " + m[1]
						return
					}
				}
				select {
				case <-changed:
				case <-wctx.Done():
					return
				}
			}
		}()
	}
	var winner string
	select {
	case winner = <-won:
	case <-ctx.Done():
		t.Fatalf("nobody elected after etcd returned; a:\n%s\nb:\n%s", tail(a.Stdout.String()), tail(b.Stdout.String()))
	}
	cancel()
	name, termS, _ := strings.Cut(winner, " ")
	termNew := atoi(t, termS)
	t.Logf("%s elected with term %d %v after etcd was healthy again (a's old term %d)", name, termNew, time.Since(back), termA)
	if termNew <= termA {
		t.Errorf("new term %d, want above %d", termNew, termA)
	}
	winnerIn := a
	if name == "b" {
		winnerIn = b
	}
	winnerIn.wait(ctx, t, 0, fmt.Sprintf(`wrote term=%d `, termNew))
	// A write a sent before it stepped down may complete after (its
	// session's lease outlives etcd's restart, so the fence still holds it
	// in order: checkHistory below); one it began after is a fault.
	s := a.Stdout.String()
	deposedLine := regexp.MustCompile(fmt.Sprintf(`change to=deposed from=leader term=%d why=session-lost at=(\d+)`, termA)).FindStringSubmatch(s)
	if deposedLine == nil {
		t.Fatalf("no time on a's deposed line:\n%s", tail(s))
	}
	deposedNS := atoi(t, deposedLine[1])
	for _, w := range regexp.MustCompile(fmt.Sprintf(`wrote term=%d rev=\d+ at=\d+ began=(\d+)`, termA)).FindAllStringSubmatch(s[deposedAt:], -1) {
		if atoi(t, w[1]) > deposedNS {
			t.Errorf("a began a write with term %d after it stepped down:\n%s", termA, tail(s))
		}
	}
	a.stop(ctx, t)
	b.stop(ctx, t)
	checkHistory(ctx, t, client(t, c), prefix, a, termA, termNew)
}
