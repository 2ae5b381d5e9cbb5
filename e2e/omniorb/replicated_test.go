//go:build linux

package omniorb

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// replicatedClientPy is an unmodified omniORBpy client of counter.idl:
// it narrows the reference in argv[1] and calls increment argv[2] times
// from argv[3] threads; after argv[4] answers it prints "marked" (the test
// kills a servant then, while the calls go on). It prints one JSON line:
// the values answered and the exceptions raised.
const replicatedClientPy = `import json, sys, threading
from omniORB import CORBA
import _GlobalIDL
orb = CORBA.ORB_init(sys.argv[:1], CORBA.ORB_ID)
c = orb.string_to_object(sys.argv[1])._narrow(_GlobalIDL.Counter)
total, nthreads, mark = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
values, errors, lock = [], [], threading.Lock()
def work(n):
    for _ in range(n):
        try:
            v = c.increment()
        except Exception as e:
            with lock:
                errors.append(repr(e))
            continue
        with lock:
            values.append(v)
            if len(values) == mark:
                print("marked", flush=True)
threads = [threading.Thread(target=work, args=(total // nthreads,)) for _ in range(nthreads)]
for th in threads: th.start()
for th in threads: th.join()
print(json.dumps({"values": values, "errors": errors}), flush=True)
orb.destroy()
`

// replicatedInspectPy asks each servant in argv[2:] (directly, not through
// the group) for value() until every one has reached argv[1] (30 s at
// most: the bridge answers with the first reply, the other replicas apply
// the entry a moment later), then prints one JSON line: each servant's
// value() and get_state().
const replicatedInspectPy = `import json, sys, time
from omniORB import CORBA
import _GlobalIDL
orb = CORBA.ORB_init(sys.argv[:1], CORBA.ORB_ID)
want = int(sys.argv[1])
cs = [orb.string_to_object(r)._narrow(_GlobalIDL.Counter) for r in sys.argv[2:]]
deadline = time.monotonic() + 30
while min(c.value() for c in cs) < want and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps({"values": [c.value() for c in cs], "states": [c.get_state().decode() for c in cs]}), flush=True)
orb.destroy()
`

var (
	stateTransferred = regexp.MustCompile(`msg="state transferred" .*peer=(\S+) position=(\d+)`)
)

// replicatedGIOP is a replicated GIOP group on a running "fulcrum serve",
// its servants ("fulcrum backend counter --giop") each behind "fulcrum
// agent replicated --giop", and the omniORBpy stubs of counter.idl.
type replicatedGIOP struct {
	o      *orbs
	bin    string
	bal    *balancer
	stubs  string
	client string // replicatedClientPy
	check  string // replicatedInspectPy
}

// replicatedReplica is one servant and its agent.
type replicatedReplica struct {
	servant, agent *proctest.Proc
	ior, url       string
}

// start runs servant number i and its agent, and waits until the agent
// listens (it registers with the balancer then).
func (r *replicatedGIOP) start(ctx context.Context, t *testing.T, i int) *replicatedReplica {
	t.Helper()
	n := strconv.Itoa(i)
	s := proctest.Start(t, "counter "+n, proctest.Options{}, r.bin, "backend", "counter", "--giop", "--listen", "127.0.0.1:0")
	ref := s.WaitOutput(ctx, t, s.Stdout, listeningIOR)[1]
	a := proctest.Start(t, "agent "+n, proctest.Options{}, r.bin, "agent", "replicated", "--giop", "--target", ref,
		"--listen", "127.0.0.1:0", "--register", r.bal.admin, "--group", "counter", "--data-dir", t.TempDir())
	url := a.WaitOutput(ctx, t, a.Stdout, agentListening)[1]
	return &replicatedReplica{servant: s, agent: a, ior: ref, url: url}
}

// python runs script with args and decodes its last line into out.
func (r *replicatedGIOP) python(ctx context.Context, t *testing.T, out any, script string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, r.o.python, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+r.stubs)
	b, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("python %s: %v\n%s\n%s", filepath.Base(script), err, b, stderr)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("python %s printed %q: %v", filepath.Base(script), b, err)
	}
}

// inspected is what replicatedInspectPy prints.
type inspected struct {
	Values []int64
	States []string
}

// expectEqual checks that the servants at iors all have value want and the
// same state.
func (r *replicatedGIOP) expectEqual(ctx context.Context, t *testing.T, want int64, iors ...string) {
	t.Helper()
	var got inspected
	r.python(ctx, t, &got, r.check, append([]string{strconv.FormatInt(want, 10)}, iors...)...)
	for i, v := range got.Values {
		if v != want {
			t.Errorf("servant %d: value() %d, want %d", i, v, want)
		}
	}
	for i := range got.States {
		if got.States[i] != got.States[0] {
			t.Errorf("servant %d's state %s differs from servant 0's %s", i, got.States[i], got.States[0])
		}
	}
}

// A replicated GIOP group: three Go Counter servants, each behind "fulcrum
// agent replicated --giop" registered by its agent's URL, and an
// unmodified omniORBpy client calling increment through the group's IOR
// from eight threads. One servant is killed with kill -9 in the middle of
// the run: every call is still answered exactly once (the values are
// 1..N), its agent stops (exit status 1), and the two live servants end
// with value N and equal states. A fourth servant then joins by state
// transfer (FT::Checkpointable get_state/set_state through its agent) and
// applies the next call like the others.
func TestReplicatedGIOPGroup(t *testing.T) {
	t.Parallel()
	o := needPython(t)
	ctx := testContext(t, 3*time.Minute)
	r := &replicatedGIOP{o: o, bin: needFulcrum(t), stubs: t.TempDir()}
	r.bal = startBalancer(ctx, t, "  - name: counter\n    protocol: giop\n    front_door: 127.0.0.1:0\n    binding: replicated\n")
	omniidlPy := `import sys; from omniidl.main import main; sys.argv[0] = "omniidl"; sys.exit(main())`
	if out, err := exec.CommandContext(ctx, o.python, "-c", omniidlPy, "-bpython", "-C", r.stubs, counterIDL).CombinedOutput(); err != nil {
		t.Fatalf("omniidl -bpython %s: %v\n%s", counterIDL, err, out)
	}
	r.client, r.check = filepath.Join(r.stubs, "client.py"), filepath.Join(r.stubs, "inspect.py")
	for path, src := range map[string]string{r.client: replicatedClientPy, r.check: replicatedInspectPy} {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	reps := []*replicatedReplica{r.start(ctx, t, 1), r.start(ctx, t, 2), r.start(ctx, t, 3)}
	g := waitReplicated(ctx, t, r.bal, len(reps))
	for _, rep := range g.Replicas {
		if !slices.ContainsFunc(reps, func(x *replicatedReplica) bool { return x.url == rep.Address }) {
			t.Errorf("replica %s registered at %s, want one of the agents' URLs", rep.ID, rep.Address)
		}
	}
	if g.Reference.IOR == "" {
		t.Fatalf("the group has no IOR: %+v", g.Reference)
	}

	const calls, threads, killAt = 400, 8, 100
	client := proctest.Start(t, "omniORBpy client", proctest.Options{Env: []string{"PYTHONPATH=" + r.stubs}},
		o.python, r.client, g.Reference.IOR, strconv.Itoa(calls), strconv.Itoa(threads), strconv.Itoa(killAt))
	client.WaitOutput(ctx, t, client.Stdout, regexp.MustCompile(`(?m)^marked$`))
	reps[0].servant.Kill9(ctx, t)
	line := client.WaitOutput(ctx, t, client.Stdout, regexp.MustCompile(`(?m)^(\{.*\})$`))[1]
	if code := client.Exit(ctx, t); code != 0 {
		t.Fatalf("the client exited with %d\n%s", code, client.Stderr.String())
	}
	var got struct {
		Values []int64
		Errors []string
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("the client printed %q: %v", line, err)
	}
	if len(got.Errors) != 0 {
		t.Errorf("%d calls raised exceptions with a servant killed: %q", len(got.Errors), got.Errors)
	}
	slices.Sort(got.Values)
	for i, v := range got.Values {
		if v != int64(i+1) {
			t.Fatalf("the %d values answered are not 1..%d (each call answered once): at %d, %d\n%v", len(got.Values), calls, i, v, got.Values)
		}
	}
	if len(got.Values) != calls {
		t.Fatalf("%d calls answered, want %d", len(got.Values), calls)
	}
	if code := reps[0].agent.Exit(ctx, t); code != 1 {
		t.Errorf("the killed servant's agent exited with %d, want 1 (it stops rather than skip an entry)", code)
	}
	r.expectEqual(ctx, t, calls, reps[1].ior, reps[2].ior)

	// A fourth replica joins by state transfer, then applies the next call.
	// (A replica that joins before its peers have reported how far they
	// applied replays the log instead: wait for their reports.)
	waitApplied(ctx, t, r.bal, calls)
	fourth := r.start(ctx, t, 4)
	jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m := fourth.agent.WaitOutput(jctx, t, fourth.agent.Stderr, stateTransferred)
	if pos, _ := strconv.ParseUint(m[2], 10, 64); pos < calls {
		t.Errorf("the fourth agent took a checkpoint at position %d, want one past the %d calls", pos, calls)
	}
	waitReplicated(ctx, t, r.bal, 3)
	var one struct {
		Values []int64
		Errors []string
	}
	r.python(ctx, t, &one, r.client, g.Reference.Corbaloc, "1", "1", "0")
	if !slices.Equal(one.Values, []int64{calls + 1}) || len(one.Errors) != 0 {
		t.Fatalf("a call after the join through %s: %+v, want value %d", g.Reference.Corbaloc, one, calls+1)
	}
	r.expectEqual(ctx, t, calls+1, reps[1].ior, reps[2].ior, fourth.ior)
}

// waitReplicated waits until exactly n of the group's replicas are active
// (their agents' healthz answers 200), and returns its status.
func waitReplicated(ctx context.Context, t *testing.T, b *balancer, n int) groupStatus {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		g := b.group(ctx, t, "counter")
		active := 0
		for _, rep := range g.Replicas {
			if rep.State == "active" {
				active++
			}
		}
		if active == n {
			return g
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the group has %d replicas, %d active; want %d active: %+v", len(g.Replicas), active, n, g.Replicas)
		case <-tick.C:
		}
	}
}

// waitApplied waits until every active replica of the group has reported
// an applied position of at least pos.
func waitApplied(ctx context.Context, t *testing.T, b *balancer, pos uint64) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		g := b.group(ctx, t, "counter")
		behind := 0
		for _, rep := range g.Replicas {
			if rep.State == "active" && rep.Applied < pos {
				behind++
			}
		}
		if behind == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d replicas have not reported applying position %d: %+v", behind, pos, g.Replicas)
		case <-tick.C:
		}
	}
}
