// Package bench runs the seeds' experiments on this machine — overhead
// (seed 000 Fig. 13/14), effectiveness (Fig. 15/16) and scalability (seed
// 002 experiments A and L) — with HAProxy and NGINX in the same run, and
// writes results.json, CSV files, PNG plots and report.md.
//
// An experiment is a value of the Experiment interface registered by name
// in an init function; Run looks it up, gives it an Env (its output
// directory, the fulcrum binary, the machine, fixtures that start and stop
// real processes) and writes what it returns:
//
//	err := bench.Run(ctx, []string{"overhead"}, bench.Options{Size: bench.Quick, Command: "fulcrum bench overhead --quick"})
//
// Every process an experiment starts belongs to its Env, runs in a process
// group of its own with SIGKILL as its parent-death signal, and is killed
// with its group when the experiment ends, whether it succeeded or not.
package bench
