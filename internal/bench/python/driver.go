package python

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// Segment is what the driver answers for one run of an arm's calls.
type Segment struct {
	Arm        string  `json:"arm"`
	Calls      int64   `json:"calls"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error"`
	ElapsedS   float64 `json:"elapsed_s"`
	MeanUS     float64 `json:"mean_us"`
	P50US      float64 `json:"p50_us"`
	P99US      float64 `json:"p99_us"`
	// Binding is a bound arm's replica URL after the segment.
	Binding *string `json:"binding"`
	// Error is set when the driver refused the command.
	Error string `json:"error"`
}

// driver is the running driver.py: commands go to its standard input,
// one JSON answer a line comes back on its standard output.
type driver struct {
	proc  *bench.Proc
	in    *os.File
	lines chan string
}

// driverArm is an arm as the driver's command line names it.
type driverArm struct {
	name, url string
	bound     bool
}

// startDriver starts driver.py with the arms and waits until it has
// warmed them up; it returns the driver and the bound arms' replica URLs.
func startDriver(ctx context.Context, env *bench.Env, python, script string, cpu, warmup int, arms []driverArm) (*driver, map[string]string, error) {
	args := []string{"-u", script, "--warmup", strconv.Itoa(warmup), "--cpu", strconv.Itoa(cpu)}
	for _, a := range arms {
		flag := "--arm"
		if a.bound {
			flag = "--bound"
		}
		args = append(args, flag, a.name+"="+a.url)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, err
	}
	p, err := env.Start(bench.ProcSpec{Name: env.UniqueName("python-driver"), Path: python, Args: args, Stdin: inR, Stdout: outW})
	inR.Close() // the child has its own
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, nil, err
	}
	d := &driver{proc: p, in: inW, lines: make(chan string, 1)}
	go func() {
		defer outR.Close()
		defer close(d.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
	}()
	line, err := d.read(ctx, 2*time.Minute)
	if err != nil {
		d.close()
		return nil, nil, err
	}
	var ready struct {
		Ready    bool              `json:"ready"`
		Bindings map[string]string `json:"bindings"`
		Error    string            `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil || !ready.Ready {
		d.close()
		if ready.Error != "" {
			return nil, nil, fmt.Errorf("bench python: driver: %s; see %s", ready.Error, p.Log)
		}
		return nil, nil, fmt.Errorf("bench python: driver not ready: %q (%v); see %s", line, err, p.Log)
	}
	return d, ready.Bindings, nil
}

// read returns the driver's next line of output.
func (d *driver) read(ctx context.Context, within time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	select {
	case line, ok := <-d.lines:
		if !ok {
			<-d.proc.Exited()
			return "", fmt.Errorf("bench python: driver exited (%v); see %s", d.proc.Err(), d.proc.Log)
		}
		return line, nil
	case <-ctx.Done():
		return "", fmt.Errorf("bench python: driver did not answer within %s: %w; see %s", within, ctx.Err(), d.proc.Log)
	}
}

// run has the driver make n calls of arm and returns its figures.
func (d *driver) run(ctx context.Context, arm string, n int) (Segment, error) {
	if _, err := fmt.Fprintf(d.in, "run %s %d\n", arm, n); err != nil {
		return Segment{}, fmt.Errorf("bench python: driver: %w; see %s", err, d.proc.Log)
	}
	// A call takes well under 10 ms even on a busy machine.
	line, err := d.read(ctx, time.Minute+time.Duration(n)*10*time.Millisecond)
	if err != nil {
		return Segment{}, err
	}
	var s Segment
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		return Segment{}, fmt.Errorf("bench python: driver answered %q: %w", line, err)
	}
	if s.Error != "" {
		return Segment{}, fmt.Errorf("bench python: driver: %s", s.Error)
	}
	if s.Arm != arm {
		return Segment{}, fmt.Errorf("bench python: driver answered for arm %q, want %q", s.Arm, arm)
	}
	return s, nil
}

// close asks the driver to quit and waits for it (it is killed when it
// does not quit in time).
func (d *driver) close() {
	_, _ = fmt.Fprintln(d.in, "quit")
	d.in.Close()
	select {
	case <-d.proc.Exited():
	case <-time.After(5 * time.Second):
		d.proc.Stop(0)
	}
	for range d.lines { // the reader ends with the pipe
	}
}
