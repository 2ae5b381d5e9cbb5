package testbed

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options configure a testbed.
type Options struct {
	// CPUPeriod is the cgroup CFS period of every replica's quota.
	// Default 10 ms, so that a replica whose quota runs out waits at
	// most a few milliseconds, not the kernel's default 100 ms (which
	// would throttle millisecond calls in 100 ms lumps). Range 1 ms – 1 s.
	CPUPeriod time.Duration
	// Cores is the machine's CPU capacity the quotas' sum must stay
	// below. Default runtime.NumCPU().
	Cores float64
}

// DefaultCPUPeriod is Options.CPUPeriod's default.
const DefaultCPUPeriod = 10 * time.Millisecond

// minQuota is the kernel's smallest CFS quota.
const minQuota = time.Millisecond

// replicaSeq numbers the replicas of all of this process's testbeds, so
// that two testbeds of one process never share a name.
var replicaSeq atomic.Int64

// Testbed is a set of replicas on this machine, each in a network
// namespace and cgroup of its own. Make it with New; Close removes
// everything it made. Safe for concurrent use.
type Testbed struct {
	opts  Options
	tools tools
	cg    cgroupFS
	pid   int

	mu       sync.Mutex
	replicas []*Replica
	cpuSum   float64
	closed   bool
}

// New makes an empty testbed, after sweeping away the leftovers of
// testbeds whose owner process has died. It fails with an error
// wrapping ErrNotRoot when not run as root, and with a clear error when
// iproute2 or a cgroup cpu controller is missing or an option is out of
// range.
func New(opts Options) (*Testbed, error) {
	if opts.CPUPeriod == 0 {
		opts.CPUPeriod = DefaultCPUPeriod
	}
	if opts.CPUPeriod < time.Millisecond || opts.CPUPeriod > time.Second {
		return nil, fmt.Errorf("testbed: CPUPeriod %v: must be in [1ms, 1s]", opts.CPUPeriod)
	}
	if opts.Cores == 0 {
		opts.Cores = float64(runtime.NumCPU())
	}
	if opts.Cores < 0 {
		return nil, fmt.Errorf("testbed: Cores %g: must be > 0", opts.Cores)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w (euid %d)", ErrNotRoot, os.Geteuid())
	}
	t, err := findTools()
	if err != nil {
		return nil, err
	}
	cg, err := detectCgroup()
	if err != nil {
		return nil, err
	}
	tb := &Testbed{opts: opts, tools: t, cg: cg, pid: os.Getpid()}
	if err := tb.sweep(); err != nil {
		return nil, fmt.Errorf("testbed: removing a dead run's leftovers: %w", err)
	}
	return tb, nil
}

// CPUPeriod is the CFS period of the replicas' quotas.
func (tb *Testbed) CPUPeriod() time.Duration { return tb.opts.CPUPeriod }

// CgroupVersion is 1 or 2: the cgroup version whose cpu controller the
// testbed uses.
func (tb *Testbed) CgroupVersion() int {
	if tb.cg.v2 {
		return 2
	}
	return 1
}

// ReplicaSpec is what a replica gets.
type ReplicaSpec struct {
	// CPU is the replica's CPU capacity in cores (0.5: half a core),
	// enforced by a CFS quota. Required: > 0, at least 1 ms per period
	// (0.1 with the default 10 ms period), and the sum over the
	// testbed's replicas must stay below the machine's cores.
	CPU float64
	// Link, when set, shapes the replica's link with tbf.
	Link *Link
}

// AddReplica makes a replica: a network namespace with a veth pair to
// the root namespace and addresses on both ends, a default route back to
// the root namespace, a cgroup with spec's CPU quota and, with
// spec.Link, a tbf qdisc. On error nothing of it is left.
func (tb *Testbed) AddReplica(spec ReplicaSpec) (*Replica, error) {
	if err := tb.checkSpec(spec); err != nil {
		return nil, err
	}
	tb.mu.Lock()
	if tb.closed {
		tb.mu.Unlock()
		return nil, errors.New("testbed: closed")
	}
	if sum := tb.cpuSum + spec.CPU; sum >= tb.opts.Cores {
		tb.mu.Unlock()
		return nil, fmt.Errorf("testbed: replica CPU %g: the replicas' quotas would sum to %g cores, must stay below the machine's %g (the balancer and clients run outside every quota)",
			spec.CPU, sum, tb.opts.Cores)
	}
	tb.cpuSum += spec.CPU
	tb.mu.Unlock()

	n := int(replicaSeq.Add(1))
	name := replicaName(tb.pid, n)
	r := &Replica{tb: tb, name: name, spec: spec, cg: cgroup{fs: tb.cg, name: name}}
	if spec.Link != nil {
		l := *spec.Link
		r.spec.Link = &l
	}
	if err := tb.build(r); err != nil {
		_ = tb.removeReplica(name)
		tb.mu.Lock()
		tb.cpuSum -= spec.CPU
		tb.mu.Unlock()
		return nil, fmt.Errorf("testbed: replica %s: %w", name, err)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.closed {
		_ = tb.removeReplica(name)
		return nil, errors.New("testbed: closed")
	}
	tb.replicas = append(tb.replicas, r)
	return r, nil
}

func (tb *Testbed) checkSpec(spec ReplicaSpec) error {
	if !(spec.CPU > 0) {
		return fmt.Errorf("testbed: replica CPU %g: must be > 0 cores", spec.CPU)
	}
	if q := time.Duration(spec.CPU * float64(tb.opts.CPUPeriod)); q < minQuota {
		return fmt.Errorf("testbed: replica CPU %g: the quota would be %v per %v period, the kernel's minimum is %v (CPU ≥ %g)",
			spec.CPU, q, tb.opts.CPUPeriod, minQuota, float64(minQuota)/float64(tb.opts.CPUPeriod))
	}
	if spec.Link != nil {
		if err := spec.Link.check(); err != nil {
			return err
		}
	}
	return nil
}

// build creates r's cgroup, namespace, veth pair, addresses, route and
// qdiscs.
func (tb *Testbed) build(r *Replica) error {
	quota := time.Duration(r.spec.CPU * float64(tb.opts.CPUPeriod))
	if err := r.cg.create(quota, tb.opts.CPUPeriod); err != nil {
		return err
	}
	ip := tb.tools.ip
	ns, host, peer := r.name, hostVeth(r.name), peerVeth(r.name)
	if _, err := run(ip, "netns", "add", ns); err != nil {
		return err
	}
	sub, err := tb.linkUp(ns, host, peer)
	if err != nil {
		return err
	}
	r.gateway = netip.AddrFrom4([4]byte{10, 77, sub, 1})
	r.addr = netip.AddrFrom4([4]byte{10, 77, sub, 2})
	for _, args := range [][]string{
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "addr", "add", r.addr.String() + "/24", "dev", peer},
		{"-n", ns, "link", "set", peer, "up"},
		{"-n", ns, "route", "add", "default", "via", r.gateway.String()},
	} {
		if _, err := run(ip, args...); err != nil {
			return err
		}
	}
	if l := r.spec.Link; l != nil {
		if _, err := run(tb.tools.tc, append([]string{"-n", ns, "qdisc", "add", "dev", peer, "root"}, l.tbfArgs()...)...); err != nil {
			return fmt.Errorf("link %s: %w", l, err)
		}
		if l.Both {
			if _, err := run(tb.tools.tc, append([]string{"qdisc", "add", "dev", host, "root"}, l.tbfArgs()...)...); err != nil {
				return fmt.Errorf("link %s: %w", l, err)
			}
		}
	}
	return nil
}

// removeReplica removes everything named name: the processes in its
// cgroup and namespace, the veth pair (with its qdiscs), the namespace
// and the cgroup. Missing parts are not errors (a half-built or
// half-removed replica).
func (tb *Testbed) removeReplica(name string) error {
	var errs []error
	cg := cgroup{fs: tb.cg, name: name}
	for _, pid := range cg.pids() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if netnsExists(name) {
		if out, err := run(tb.tools.ip, "netns", "pids", name); err == nil {
			for _, s := range strings.Fields(out) {
				if pid, err := strconv.Atoi(s); err == nil && pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
	if linkExists(hostVeth(name)) {
		if _, err := run(tb.tools.ip, "link", "del", hostVeth(name)); err != nil && linkExists(hostVeth(name)) {
			errs = append(errs, err)
		}
	}
	if netnsExists(name) {
		if _, err := run(tb.tools.ip, "netns", "del", name); err != nil && netnsExists(name) {
			errs = append(errs, err)
		}
	}
	if err := cg.remove(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// linkExists reports whether the root namespace has an interface name.
func linkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}

// netnsPath is where ip netns keeps a named namespace's handle.
func netnsPath(name string) string { return "/run/netns/" + name }

// netnsExists reports whether ip netns knows a namespace name.
func netnsExists(name string) bool {
	_, err := os.Stat(netnsPath(name))
	return err == nil
}

// Close stops every process in the replicas and removes the replicas
// (qdiscs, veths, namespaces, cgroups). It returns what could not be
// removed; calling it again retries nothing and returns nil.
func (tb *Testbed) Close() error {
	tb.mu.Lock()
	if tb.closed {
		tb.mu.Unlock()
		return nil
	}
	tb.closed = true
	rs := tb.replicas
	tb.replicas = nil
	tb.mu.Unlock()
	var errs []error
	for _, r := range rs {
		r.stopProcs()
		if err := tb.removeReplica(r.name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
