//go:build linux

package omniorb

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freshORB is one line of prime_client --inits.
type freshORB struct {
	Init   int   `json:"init"`
	OK     bool  `json:"ok"`
	Us     int64 `json:"us"`
	InitUs int64 `json:"init_us"`
	Sends  int   `json:"sends"`
}

// omniORB's trace (-ORBtraceLevel 25) logs every GIOP message sent.
var sentChunk = regexp.MustCompile(`(?m)sendChunk: to (\S+) \d+ bytes`)

// sentTo returns the destinations of the messages in an omniORB trace, in
// order.
func sentTo(trace string) []string {
	var out []string
	for _, m := range sentChunk.FindAllStringSubmatch(trace, -1) {
		out = append(out, m[1])
	}
	return out
}

// locateRun is what one way of answering LocateRequests costs a fresh
// omniORB client.
type locateRun struct {
	mode          string // giop.locate
	ref           string // "IOR" or "corbaloc"
	kind          clientKind
	target        string   // the reference
	messages      []string // where the messages before the first reply went: "front" or "replica"
	forwardedSend int      // Requests (not LocateRequests) the first call took (C++ client)
	samples       []time.Duration
	median, p95   time.Duration
	mean          time.Duration
}

// The group's IOR makes omniORB send a LocateRequest before its first call
// (its reference carries the type, and omniORB verifies that the object
// exists); the front door answers it OBJECT_FORWARD (giop.locate:
// forward, the default) or OBJECT_HERE (here), in which case the Request
// that follows is answered LOCATION_FORWARD. This test counts the
// messages a fresh client sends before its first reply in both modes
// (from omniORB's own trace) and times fresh ORBs (string_to_object,
// _narrow and the first call). The front door must see one message per
// client with forward and two with here, and every call must succeed.
// FULCRUM_OMNIORB_INITS sets the fresh ORBs timed per mode (default 20);
// docs/giop-omniorb.md has a longer run.
func TestLocateRequestAnswers(t *testing.T) {
	o := needORBs(t)
	inits := 20
	if v := os.Getenv("FULCRUM_OMNIORB_INITS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FULCRUM_OMNIORB_INITS=%q: want a number of fresh ORBs >= 1", v)
		}
		inits = n
	}
	ctx := testContext(t, 2*time.Minute+time.Duration(inits)*20*time.Millisecond)
	kinds := []clientKind{cxxClient}
	if o.python != "" {
		kinds = append(kinds, pyClient)
	}
	modes := []string{"forward", "here"}
	rigs := map[string]*rig{}
	for _, mode := range modes {
		rigs[mode] = o.startRig(ctx, t, rigOpts{locate: mode, report: "1h"})
	}
	// Messages: one traced client per mode, client and reference.
	var runs []*locateRun
	for _, mode := range modes {
		r := rigs[mode]
		for _, kind := range kinds {
			for _, ref := range []string{r.ior, r.corbaloc} {
				run := &locateRun{mode: mode, ref: "IOR", kind: kind, target: ref}
				if strings.HasPrefix(ref, "corbaloc:") {
					run.ref = "corbaloc"
				}
				run.messages, run.forwardedSend = traceFirstCall(ctx, t, o, r, kind, ref)
				runs = append(runs, run)
			}
		}
	}
	// Time: fresh C++ ORBs, the modes and references taking turns in five
	// rounds (the order reversed every round) so that drift in the
	// machine's load falls on all alike.
	var timed []*locateRun
	for _, run := range runs {
		if run.kind == cxxClient {
			timed = append(timed, run)
		}
	}
	const rounds = 5
	for round := range rounds {
		n := inits / rounds
		if round < inits%rounds {
			n++
		}
		if n == 0 {
			continue
		}
		for i := range timed {
			run := timed[i]
			if round%2 == 1 {
				run = timed[len(timed)-1-i]
			}
			run.samples = append(run.samples, timeFreshORBs(ctx, t, o, run.target, n)...)
		}
	}
	for _, run := range timed {
		run.median, run.p95, run.mean = stats(run.samples)
	}
	for _, run := range runs {
		front := 0
		for _, m := range run.messages {
			if m == "front" {
				front++
			}
		}
		if run.kind != cxxClient {
			t.Logf("locate %-7s %-8s %-11s: %d messages before the first reply %v", run.mode, run.ref, run.kind, len(run.messages), run.messages)
		} else {
			t.Logf("locate %-7s %-8s %-11s: %d messages before the first reply %v; fresh ORB to first reply: median %v, p95 %v, mean %v over %d",
				run.mode, run.ref, run.kind, len(run.messages), run.messages, run.median, run.p95, run.mean, len(run.samples))
		}
		if run.ref != "IOR" {
			continue
		}
		want := map[string]int{"forward": 1, "here": 2}[run.mode]
		if front != want {
			t.Errorf("locate %s, %s client with the IOR: the front door got %d messages, want %d (%v)", run.mode, run.kind, front, want, run.messages)
		}
	}
}

// traceFirstCall runs a fresh client making one call on ref with omniORB's
// trace on and returns where its messages went ("front" or "replica").
func traceFirstCall(ctx context.Context, t *testing.T, o *orbs, r *rig, kind clientKind, ref string) ([]string, int) {
	t.Helper()
	p := o.startClient(t, kind, "-ORBtraceLevel", "25", "--calls", "1", "--per-call", ref)
	code, lines, sum := clientResult(ctx, t, kind, p, nil)
	if code != 0 || sum.OK != 1 {
		t.Fatalf("%s client on %.20s...: exit %d, %+v", kind, ref, code, sum)
	}
	var where []string
	for _, to := range sentTo(p.Stderr.String()) {
		switch {
		case to == r.front:
			where = append(where, "front")
		case r.replicaOf(to) >= 0:
			where = append(where, "replica")
		default:
			t.Fatalf("%s client sent a message to %s, neither the front door %s nor a replica", kind, to, r.front)
		}
	}
	if len(where) == 0 {
		t.Fatalf("%s client: no sendChunk line in its trace:\n%s", kind, p.Stderr)
	}
	return where, lines[0].Sends
}

// timeFreshORBs times n fresh ORBs of the C++ client, each resolving ref
// and making one call, from after ORB_init to the first reply.
func timeFreshORBs(ctx context.Context, t *testing.T, o *orbs, ref string, n int) []time.Duration {
	t.Helper()
	p := o.startClient(t, cxxClient, "--inits", strconv.Itoa(n), ref)
	code, _, sum := clientResult(ctx, t, cxxClient, p, nil)
	if code != 0 || sum.OK != n {
		t.Fatalf("%d fresh ORBs on %.20s...: exit %d, %+v", n, ref, code, sum)
	}
	runs := jsonLines[freshORB](t, p.Stdout.String(), func(l string) bool { return strings.HasPrefix(l, `{"init"`) })
	if len(runs) != n {
		t.Fatalf("%d fresh ORBs: %d lines", n, len(runs))
	}
	out := make([]time.Duration, n)
	for i, r := range runs {
		out[i] = time.Duration(r.Us) * time.Microsecond
	}
	return out
}

// stats returns the median, 95th percentile and mean of d.
func stats(d []time.Duration) (median, p95, mean time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var total time.Duration
	for _, v := range s {
		total += v
	}
	return s[len(s)/2], s[len(s)*95/100], total / time.Duration(len(s))
}
