package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Replica is one server of the testbed: a network namespace, a veth pair
// to the root namespace, a cgroup with a CPU quota, and the processes
// started in them.
type Replica struct {
	tb            *Testbed
	name          string
	spec          ReplicaSpec
	cg            cgroup
	addr, gateway netip.Addr

	mu    sync.Mutex
	procs []*exec.Cmd
}

// Name is the replica's network namespace (and cgroup) name,
// fb<pid>r<n>; "nsenter --net=/run/netns/<Name>" (or "ip netns exec
// <Name>") runs a command in it.
func (r *Replica) Name() string { return r.name }

// Addr is the replica's address, which the root namespace (balancers,
// clients) reaches it at.
func (r *Replica) Addr() netip.Addr { return r.addr }

// Gateway is the root namespace's address on the replica's link: what a
// process in the replica connects to to reach a server of the root
// namespace. Such a server must listen on it or on all addresses (a
// replica cannot reach the root namespace's 127.0.0.1).
func (r *Replica) Gateway() netip.Addr { return r.gateway }

// CPU is the replica's CPU capacity in cores.
func (r *Replica) CPU() float64 { return r.spec.CPU }

// Link is the replica's link shaping, nil when unshaped.
func (r *Replica) Link() *Link {
	if r.spec.Link == nil {
		return nil
	}
	l := *r.spec.Link
	return &l
}

// joinScript runs as /bin/sh -c: it writes its own pid into the cgroup's
// procs files ($1 and, when not empty, $2) and then execs the rest of its
// arguments, so that the process is in the cgroup before the command
// runs (nothing escapes the quota, not even a child forked early).
const joinScript = `echo $$ > "$1" && { [ -z "$2" ] || echo $$ > "$2"; } && shift 2 && exec "$@"`

// Wrap rewrites cmd, not yet started, so that starting it runs its
// program in the replica's network namespace (nsenter --net) and cgroup.
// The process keeps its pid through the wrapping (sh and nsenter exec,
// they do not fork), so cmd.Process is the program's process. cmd's other
// fields (Env, Dir, Stdout, SysProcAttr, ...) are kept.
//
// Use Wrap when something else starts the process (a bench's process
// tracker); Start wraps and starts, and kills the process at Close.
// Whoever starts a wrapped command, Close kills whatever runs in the
// replica's cgroup and namespace.
//
// The program shares the root namespace's mounts (nsenter enters only the
// network namespace; ip netns exec would remount /sys and hide
// /sys/fs/cgroup), so it can read its own cgroup: its quota, and its
// CPU usage beside its own process's. /sys/class/net shows the root
// namespace's links, not the replica's.
func (r *Replica) Wrap(cmd *exec.Cmd) error {
	if cmd.Process != nil {
		return errors.New("testbed: Wrap: the command has already started")
	}
	if cmd.Err != nil {
		return fmt.Errorf("testbed: Wrap: %w", cmd.Err)
	}
	if cmd.Path == "" {
		return errors.New("testbed: Wrap: the command has no path")
	}
	files := r.cg.procsFiles()
	second := ""
	if len(files) > 1 {
		second = files[1]
	}
	args := []string{"sh", "-c", joinScript, "sh", files[0], second, r.tb.tools.nsenter, "--net=" + netnsPath(r.name), "--", cmd.Path}
	if len(cmd.Args) > 1 {
		args = append(args, cmd.Args[1:]...)
	}
	cmd.Path, cmd.Args = r.tb.tools.sh, args
	return nil
}

// Start wraps cmd (see Wrap) and starts it in its own process group.
// It returns once the process is in the replica's cgroup. The caller
// waits for it (cmd.Wait) as usual; Close kills it if it still runs.
func (r *Replica) Start(cmd *exec.Cmd) error {
	if err := r.Wrap(cmd); err != nil {
		return err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testbed: replica %s: starting %s: %w", r.name, cmd.Args[len(cmd.Args)-1], err)
	}
	r.procs = append(r.procs, cmd)
	return r.waitJoined(cmd.Process.Pid)
}

// waitJoined waits until process pid is in the replica's cgroup (the
// wrapper's first step) or has exited, so that Start returns with the
// process under the quota.
func (r *Replica) waitJoined(pid int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if slices.Contains(r.cg.pids(), pid) {
			return nil
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return nil // exited already: Wait tells the caller how
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && zombie(b) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testbed: replica %s: process %d did not join the cgroup within 10s", r.name, pid)
		}
		time.Sleep(time.Millisecond) // polling the wrapper's first step
	}
}

// zombie reports whether a /proc/<pid>/stat line is an exited process's.
func zombie(stat []byte) bool {
	// "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// stopProcs kills the process groups of the processes Start started.
func (r *Replica) stopProcs() {
	r.mu.Lock()
	procs := r.procs
	r.procs = nil
	r.mu.Unlock()
	for _, c := range procs {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
}

// AcctDir is the directory of the replica's cgroup that accounts its CPU
// time (cpuacct.usage on cgroup v1, cpu.stat on v2), as `fulcrum agent
// http --cgroup` and cgroupcpu.Usage take it; "" on a cgroup v1 machine
// without the cpuacct controller.
func (r *Replica) AcctDir() string { return r.cg.usageDir() }

// Pids lists the processes in the replica's cgroup.
func (r *Replica) Pids() []int { return r.cg.pids() }

// CPUUsage is the CPU time the replica's processes have used since the
// replica was made (cgroup v1 cpuacct.usage, v2 cpu.stat usage_usec).
// The difference of two readings over a window, divided by the window,
// is the replica's CPU load in cores.
func (r *Replica) CPUUsage() (time.Duration, error) { return r.cg.usage() }

// Throttled is how many periods the replica's quota ran out in, and for
// how long its processes were held back in all (cpu.stat).
func (r *Replica) Throttled() (periods int64, total time.Duration, err error) {
	return r.cg.throttled()
}

// Hog is a CPU hog running in a replica's cgroup: a process that spins
// and takes what the quota leaves to the replica's other processes.
type Hog struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// StartHog starts a CPU hog (a shell's busy loop) in the replica's
// cgroup and namespace. Each hog spins one thread: with the replica's
// server busy too, the CFS shares the quota between them, so one hog
// takes about half the replica's capacity from a busy server (n hogs:
// n/(n+1)). Stop it with Stop; Close stops it too.
func (r *Replica) StartHog() (*Hog, error) {
	cmd := exec.Command(r.tb.tools.sh, "-c", "while :; do :; done")
	if err := r.Start(cmd); err != nil {
		return nil, err
	}
	h := &Hog{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(h.done)
	}()
	return h, nil
}

// Pid is the hog's process id.
func (h *Hog) Pid() int { return h.cmd.Process.Pid }

// Stop kills the hog and waits for it to exit.
func (h *Hog) Stop() {
	h.once.Do(func() { _ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL) })
	<-h.done
}
