// Package eft is "fulcrum bench eft": Chen et al.'s simulation of EFT
// work-flow scheduling (§V, Table I, Fig. 17/18). Random work-flows from
// Table I's generator (generate.go) run under EFT, ETT and round-robin on
// the simulated servers of the scheduler package (internal/eft.Simulate);
// the report gives each policy's mean makespan over round-robin's per
// setting, and checks the paper's lower bounds on EFT's improvement (25%
// stateful: ≥ 9.31% over round-robin and ≥ 2.76% over ETT; 50%: ≥ 8% and
// ≥ 5%), explaining each miss from the simulation's own figures (how far
// round-robin and ETT are above a lower bound no schedule can beat).
//
// The simulation is CPU only and deterministic: each graph is drawn from
// a PCG seeded with (--seed, setting, graph), and its figures do not
// depend on the machine's speed or the workers' timing.
//
// Files: eft.go (the experiment, its flags and the run), generate.go (the
// generator), report.go (rows, targets, figures). Real work-flows against
// the testbed's replicas belong in real*.go files of this package: they
// set realRun from an init function, and Run calls it after the
// simulation with the results and report to add to: real.go on
// loopback, real_testbed.go in testbed slots (--testbed).
package eft
