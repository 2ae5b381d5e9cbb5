package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// ClientCommand is the hidden subcommand of the fulcrum binary that runs
// one client process (RunClient).
const ClientCommand = "bench-client"

// ClientSpec is what one client process runs: Callers closed-loop
// callers of an endpoint, from Start (a wall-clock time shared by every
// process of a run: Beekhuis's synchronised start) until Start+Duration.
type ClientSpec struct {
	Endpoint Endpoint
	// BodySize, when positive, sends a body of that many bytes
	// (Endpoint.Body is not passed on the command line).
	BodySize int
	Callers  int
	Start    time.Time
	Duration time.Duration
}

// Args are the command-line arguments of ClientCommand for s.
func (s ClientSpec) Args() []string {
	args := []string{ClientCommand,
		"--url", s.Endpoint.URL,
		"--callers", strconv.Itoa(s.Callers),
		"--start", s.Start.Format(time.RFC3339Nano),
		"--duration", s.Duration.String(),
	}
	if s.Endpoint.Method != "" {
		args = append(args, "--method", s.Endpoint.Method)
	}
	if s.BodySize > 0 {
		args = append(args, "--body-size", strconv.Itoa(s.BodySize))
	}
	if s.Endpoint.Binding {
		args = append(args, "--binding")
	}
	return args
}

// ClientReport is what a client process writes to its standard output,
// as JSON.
type ClientReport struct {
	// Recorder holds the latencies of the calls that succeeded, exactly
	// (histogram and moments), to be merged by the parent.
	Recorder *stats.Recorder `json:"recorder"`
	Errors   int64           `json:"errors"`
	// FirstError is the first failed call's error.
	FirstError string `json:"first_error,omitempty"`
	// ElapsedNS is from the start to the end of the last call.
	ElapsedNS int64 `json:"elapsed_ns"`
	// LateNS is how long after Start the callers were ready (0: on
	// time). A late process started its calls late, not at Start.
	LateNS int64 `json:"late_ns"`
}

// RunClient runs a client process: it warms its callers up, waits for
// the synchronised start, calls until the end and writes its ClientReport
// to w.
func RunClient(ctx context.Context, s ClientSpec, w io.Writer) error {
	if s.Callers < 1 || s.Duration <= 0 || s.Start.IsZero() || s.Endpoint.URL == "" {
		return errors.New("bench: a client needs --url, --callers ≥ 1, --start and a positive --duration")
	}
	if s.BodySize > 0 {
		s.Endpoint.Body = Payload(s.BodySize)
	}
	cs := NewCallers(s.Endpoint, s.Callers)
	defer cs.Close()
	if err := cs.Warm(ctx, warmupCalls); err != nil {
		return err
	}
	var late time.Duration
	if d := time.Since(s.Start); d > 0 {
		late = d
	}
	res, err := cs.Run(ctx, s.Start, 0, s.Start.Add(s.Duration))
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(ClientReport{
		Recorder: res.Rec, Errors: res.Errors, FirstError: res.FirstError,
		ElapsedNS: int64(res.Elapsed), LateNS: int64(late),
	})
}

// RunClients runs processes client processes ("fulcrum bench-client"),
// each with callers closed-loop callers of ep, all starting at one
// moment and calling for d, and merges what they measured. Late is how
// late the latest process was for the start.
func (e *Env) RunClients(ctx context.Context, ep Endpoint, processes, callers int, d time.Duration) (LoadResult, time.Duration, error) {
	spec := ClientSpec{Endpoint: ep, BodySize: len(ep.Body), Callers: callers, Duration: d}
	spec.Endpoint.Body = nil
	// Time to start the processes and open their connections.
	spec.Start = time.Now().Add(400*time.Millisecond + time.Duration(processes)*100*time.Millisecond)
	type child struct {
		p   *Proc
		out bytes.Buffer
	}
	children := make([]*child, processes)
	for i := range children {
		c := &child{}
		p, err := e.Start(ProcSpec{Name: e.UniqueName(ClientCommand), Path: e.Binary, Args: spec.Args(), Stdout: &c.out})
		if err != nil {
			return LoadResult{}, 0, err
		}
		c.p = p
		children[i] = c
	}
	wait, cancel := context.WithDeadline(ctx, spec.Start.Add(d+time.Minute))
	defer cancel()
	procs := make([]*Proc, len(children))
	for i, c := range children {
		procs[i] = c.p
	}
	WaitExit(wait, procs)
	res := LoadResult{Rec: stats.NewRecorder()}
	var late time.Duration
	for _, c := range children {
		if c.p.err != nil {
			return LoadResult{}, 0, fmt.Errorf("bench: client process %s: %v; see %s", c.p.Name, c.p.err, c.p.Log)
		}
		var rep ClientReport
		if err := json.Unmarshal(c.out.Bytes(), &rep); err != nil || rep.Recorder == nil {
			return LoadResult{}, 0, fmt.Errorf("bench: client process %s wrote no report (%v); see %s", c.p.Name, err, c.p.Log)
		}
		res.merge(LoadResult{Rec: rep.Recorder, Errors: rep.Errors, FirstError: rep.FirstError, Elapsed: time.Duration(rep.ElapsedNS)})
		late = max(late, time.Duration(rep.LateNS))
	}
	return res, late, ctx.Err()
}
