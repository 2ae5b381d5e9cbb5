package testbed

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// Names: the replica n of the testbeds of process pid is fb<pid>r<n>
// (network namespace and cgroup); its veth ends are fb<pid>r<n>h (root
// namespace) and fb<pid>r<n>p (the replica's namespace). At most 15
// characters, the kernel's limit for an interface name, for any pid
// (pid_max ≤ 4194304) and n < 1000.
func replicaName(pid, n int) string { return fmt.Sprintf("fb%dr%d", pid, n) }

func hostVeth(name string) string { return name + "h" }
func peerVeth(name string) string { return name + "p" }

// nameRe matches the testbed's names, with the owner's pid as the first
// group and an optional veth suffix.
var nameRe = regexp.MustCompile(`^fb([0-9]+)r([0-9]+)([hp]?)$`)

// ownerOf returns the pid in a testbed name, or false when the name is
// not one of the testbed's.
func ownerOf(name string) (int, bool) {
	m := nameRe.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// alive reports whether process pid exists. A pid reused by another
// process counts as alive: a leftover is then kept, which is the safe
// mistake.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// sweep removes the leftovers of testbeds whose owner is dead: processes
// in their namespaces and cgroups, veths, namespaces, cgroups. Those of
// live owners (this process included) are left alone.
func (tb *Testbed) sweep() error {
	stale := map[string]bool{} // replica names
	nsOut, err := run(tb.tools.ip, "netns", "list")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(nsOut, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			if pid, ok := ownerOf(f[0]); ok && !alive(pid) {
				stale[f[0]] = true
			}
		}
	}
	linkOut, err := run(tb.tools.ip, "-o", "link", "show")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(linkOut, "\n") {
		// "12: fb123r1h@if11: <...> ..."
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		ifname, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if pid, ok := ownerOf(ifname); ok && !alive(pid) {
			stale[strings.TrimRight(ifname, "hp")] = true
		}
	}
	for _, name := range tb.cg.names() {
		if pid, ok := ownerOf(name); ok && !alive(pid) {
			stale[name] = true
		}
	}
	var errs []error
	for name := range stale {
		if err := tb.removeReplica(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
