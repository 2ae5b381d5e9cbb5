// Package testbed makes replicas on one machine behave like separate
// servers: each replica runs in a network namespace of its own (a veth
// pair to the root namespace, its own address), with a CPU quota of its
// own (a cgroup) and, optionally, a link shaped by tc's token bucket
// filter (tbf). Balancers and clients run in the root namespace and reach
// a replica at its address; a replica reaches the root namespace at its
// gateway address.
//
// It needs root (network namespaces, veth, tc, cgroups) and iproute2's
// ip and tc. New returns an error wrapping ErrNotRoot without root;
// Available says whether a testbed can be made here, for tests that must
// fail in CI and skip elsewhere.
//
// Everything a testbed creates carries its owner's pid in its name
// (fb<pid>r<n>: the network namespace, the cgroup, and the veth ends
// fb<pid>r<n>h in the root namespace and fb<pid>r<n>p in the replica's).
// Close removes it all: the processes in the replicas' cgroups and
// namespaces, the qdiscs, the veths, the namespaces and the cgroups. New
// first sweeps away the leftovers of testbeds whose owner has died (a
// crashed run) and only those: a live process's testbed is never touched,
// so parallel test packages do not clean each other up.
//
// Usage:
//
//	tb, err := testbed.New(testbed.Options{})
//	if err != nil { ... }
//	defer tb.Close()
//	r, err := tb.AddReplica(testbed.ReplicaSpec{
//		CPU:  0.4, // cores
//		Link: &testbed.Link{Rate: "500kbit", Burst: "2kb", Latency: 10 * time.Millisecond},
//	})
//	cmd := exec.Command("/usr/bin/fulcrum", "backend", "prime", "--listen", r.Addr().String()+":8080")
//	if err := r.Start(cmd); err != nil { ... } // in r's namespace and cgroup
//	hog, err := r.StartHog()                   // a busy loop in r's cgroup
//	...
//	hog.Stop()
//	cmd.Process.Kill(); cmd.Wait()
//
// The sum of the replicas' CPU quotas must stay below the machine's
// cores, so that the balancer and the load generator, outside every
// quota, are never starved; AddReplica refuses a replica that would break
// that.
package testbed
