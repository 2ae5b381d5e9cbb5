// Package bench is the harness of fulcrum's benchmarks: it runs the papers'
// experiments on this machine with HAProxy and NGINX in the same run, and
// writes results.json, CSV files, PNG plots and report.md.
//
// The harness holds what experiments share: the environment (Env: output
// directory, fulcrum binary, machine, options), real processes (Proc,
// replicas, balancers, the testbed's NGINX replicas and agents, omniORB
// servers), the competitors (HAProxy, NGINX), load generators (Callers,
// client processes), results, reports and plots, and the registry of
// experiments. Each experiment is a package of its own that registers
// itself by name in its init function (Register; a duplicate name
// panics):
//
//   - overhead: the TAO paper §4.2, Fig. 13/14 (also over GIOP)
//   - effectiveness: the TAO paper §4.3, Fig. 15/16 (also over GIOP)
//   - scalability: Beekhuis's thesis experiments A and L
//   - albl: the ALBL paper §5, Fig. 3–10, on the testbed (root)
//   - remoting: the .NET Remoting paper §V, Fig. 13/14, on the testbed (root), with its
//     queueing model in remoting/queuemodel
//   - eft: the .NET Remoting paper §V, Fig. 17/18: EFT work-flow scheduling
//     simulated (CPU only)
//
// Run looks an experiment up, gives it an Env and writes what it returns:
//
//	import _ "github.com/fulcrum-lb/fulcrum/internal/bench/overhead" // registers "overhead"
//
//	exp, _ := bench.New("overhead")
//	outs, err := bench.Run(ctx, []bench.Experiment{exp}, bench.Options{Size: bench.Quick, Command: "fulcrum bench overhead --quick"})
//
// Every process an experiment starts belongs to its Env, runs in a process
// group of its own with SIGKILL as its parent-death signal, and is killed
// with its group when the experiment ends, whether it succeeded or not.
package bench
