package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Outcome is how one experiment of a run ended.
type Outcome struct {
	// Name is the experiment's.
	Name string
	// Dir is where it wrote its output.
	Dir string
	// Results is what it measured; nil when it could not run.
	Results *Results
	// Err says why it could not run.
	Err error
}

// DefaultDir is the default output directory of a run named name (an
// experiment, or "all") started at t: ./bench-results/<name>-<time>.
func DefaultDir(name string, t time.Time) string {
	return filepath.Join("bench-results", name+"-"+t.Format("20060102-150405"))
}

// Run runs experiments one after the other. A single experiment writes
// into o.Out (default DefaultDir); several each write into a
// subdirectory of o.Out named after them (default DefaultDir("all")). An
// experiment that cannot run does not stop the others: its Outcome
// carries the error, and so does the error returned.
func Run(ctx context.Context, exps []Experiment, o Options) ([]Outcome, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	now := time.Now()
	root := o.Out
	if root == "" {
		name := "all"
		if len(exps) == 1 {
			name = exps[0].Name()
		}
		root = DefaultDir(name, now)
	}
	var outs []Outcome
	var errs []error
	for _, exp := range exps {
		dir := root
		if len(exps) > 1 {
			dir = filepath.Join(root, exp.Name())
		}
		out := runOne(ctx, exp, dir, o)
		if out.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", out.Name, out.Err))
		}
		outs = append(outs, out)
		if ctx.Err() != nil {
			break
		}
	}
	return outs, errors.Join(errs...)
}

// runOne runs one experiment in an environment of its own, which is
// closed (every process killed) however it ends.
func runOne(ctx context.Context, exp Experiment, dir string, o Options) Outcome {
	out := Outcome{Name: exp.Name(), Dir: dir}
	env, err := NewEnv(ctx, dir, o)
	if err != nil {
		out.Err = err
		return out
	}
	defer env.Close()
	started := time.Now()
	env.Logf("%s (%s): writing to %s", exp.Name(), o.Size, dir)
	res, err := exp.Run(ctx, env)
	if err == nil && res == nil {
		err = fmt.Errorf("bench: %s returned no results", exp.Name())
	}
	if err != nil {
		out.Err = err
		env.Logf("%s could not run: %v", exp.Name(), err)
		return out
	}
	res.Experiment, res.Command, res.Started, res.Machine = exp.Name(), o.Command, started, env.Machine
	if res.Report == nil {
		res.Report = NewReport("fulcrum bench " + exp.Name())
	}
	if ts := res.Report.Targets(); len(ts) > 0 {
		if res.Extra == nil {
			res.Extra = map[string]any{}
		}
		res.Extra["targets"] = ts
	}
	if err := res.WriteJSON(env.Path("results.json")); err != nil {
		out.Err = err
		return out
	}
	if err := res.Report.WriteFile(env.Path("report.md"), res); err != nil {
		out.Err = err
		return out
	}
	out.Results = res
	env.Logf("%s done in %s: %s", exp.Name(), time.Since(started).Round(time.Second), env.Path("report.md"))
	return out
}
