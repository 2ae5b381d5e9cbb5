package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer answers /echo with the body, /fail with 500, /short with
// fewer bytes than it got, and anything else with "ok"; it counts calls.
func echoServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/echo":
			_, _ = w.Write(body)
		case "/fail":
			http.Error(w, "no", http.StatusInternalServerError)
		case "/short":
			_, _ = w.Write(body[:len(body)/2])
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestCallersMakeTheirShareOfCalls(t *testing.T) {
	t.Parallel()
	srv, calls := echoServer(t)
	cs := NewCallers(Endpoint{URL: srv.URL + "/echo", Method: http.MethodPost, Body: Payload(2400)}, 3)
	defer cs.Close()
	if err := cs.Warm(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 6 {
		t.Errorf("warm-up made %d calls, want 2 per caller", got)
	}
	start := time.Now().Add(50 * time.Millisecond)
	res, err := cs.Run(context.Background(), start, 100, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rec.Count() != 100 || res.Errors != 0 || calls.Load() != 106 {
		t.Errorf("recorded %d, %d errors, server saw %d calls; want 100, 0, 106", res.Rec.Count(), res.Errors, calls.Load())
	}
	f := res.Figures()
	if !(f.ThroughputRPS > 0) || !(f.Mean > 0) || f.P5 > f.P50 || f.P50 > f.P99 || f.P99 > f.Max {
		t.Errorf("figures %+v", f)
	}
}

func TestCallersRunUntilTheEnd(t *testing.T) {
	t.Parallel()
	srv, _ := echoServer(t)
	res, err := RunLoad(context.Background(), Endpoint{URL: srv.URL + "/"}, 2, 0, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The end is fixed before the start, which comes a little later.
	if res.Rec.Count() == 0 || res.Elapsed < 50*time.Millisecond || res.Elapsed > 5*time.Second {
		t.Errorf("%d calls in %s, want some in about 100ms", res.Rec.Count(), res.Elapsed)
	}
}

func TestFailedCallsAreCountedNotRecorded(t *testing.T) {
	t.Parallel()
	srv, _ := echoServer(t)
	for _, ep := range []Endpoint{
		{URL: srv.URL + "/fail"},
		{URL: srv.URL + "/short", Method: http.MethodPost, Body: Payload(100)},
	} {
		cs := NewCallers(ep, 1)
		res, err := cs.Run(context.Background(), time.Time{}, 5, time.Time{})
		cs.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.Rec.Count() != 0 || res.Errors != 5 || res.FirstError == "" {
			t.Errorf("%s: recorded %d, %d errors (%q); want 0 and 5", ep.URL, res.Rec.Count(), res.Errors, res.FirstError)
		}
	}
}

func TestRunClientWritesAMergeableReport(t *testing.T) {
	t.Parallel()
	srv, calls := echoServer(t)
	spec := ClientSpec{
		Endpoint: Endpoint{URL: srv.URL + "/echo", Method: http.MethodPost},
		BodySize: 240, Callers: 2, Start: time.Now().Add(20 * time.Millisecond), Duration: 100 * time.Millisecond,
	}
	var out bytes.Buffer
	if err := RunClient(context.Background(), spec, &out); err != nil {
		t.Fatal(err)
	}
	var rep ClientReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	// The calls run from the start (or a little after, when its timer
	// fires late) to its end, start+100ms.
	if rep.Recorder == nil || rep.Recorder.Count() == 0 || rep.Errors != 0 || rep.ElapsedNS < int64(50*time.Millisecond) {
		t.Fatalf("report %s", out.String())
	}
	if got, want := rep.Recorder.Count(), calls.Load()-2*warmupCalls; got != want {
		t.Errorf("recorded %d calls, the server saw %d after the warm-up", got, want)
	}
	args := strings.Join(spec.Args(), " ")
	for _, want := range []string{ClientCommand, "--url " + srv.URL + "/echo", "--callers 2", "--method POST", "--body-size 240", "--duration 100ms"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
}

func TestPayload(t *testing.T) {
	t.Parallel()
	for _, n := range []int{24, 240, 2400} {
		p := Payload(n)
		if len(p) != n || !bytes.HasPrefix(p, []byte("fulcrum-bench-payload-24")) {
			t.Errorf("Payload(%d) = %q...", n, p[:min(len(p), 30)])
		}
	}
}
