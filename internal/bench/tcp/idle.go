package tcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// procMemory is a process's resident memory and open descriptors.
type procMemory struct {
	RSSBytes int64
	FDs      int
}

// readProcMemory reads pid's VmRSS from /proc/PID/status and counts
// /proc/PID/fd.
func readProcMemory(pid int) (procMemory, error) {
	var m procMemory
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, fmt.Errorf("bench tcp: memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	found := false
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return m, fmt.Errorf("bench tcp: VmRSS of pid %d: %q: %w", pid, rest, err)
		}
		m.RSSBytes, found = kb*1024, true
	}
	if !found {
		return m, fmt.Errorf("bench tcp: no VmRSS in /proc/%d/status", pid)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return m, fmt.Errorf("bench tcp: descriptors of pid %d: %w", pid, err)
	}
	m.FDs = len(fds)
	return m, nil
}

// openIdle opens n connections to a, each carrying one byte there and back
// (so that a balancer has connected to its replica too), 32 at a time. It
// returns the connections, which the caller closes, also on error.
func openIdle(ctx context.Context, a *arm, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make(chan error, 1)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			nc, err := dial(ctx, a.addr(i))
			if err == nil {
				conns[i] = nc
				err = exchange(nc, []byte{'i'}, make([]byte, 1))
			}
			if err != nil {
				select {
				case errs <- fmt.Errorf("bench tcp: idle connection %d of %d to %s: %w", i+1, n, a.name, err):
				default:
				}
			}
		})
		select {
		case err := <-errs:
			wg.Wait()
			return compact(conns), err
		default:
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		return compact(conns), err
	default:
	}
	return conns, ctx.Err()
}

func compact(conns []net.Conn) []net.Conn {
	out := conns[:0]
	for _, c := range conns {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// descriptorLimit is what the bench did about RLIMIT_NOFILE for n idle
// connections: every process it starts inherits its limit, and a balancer
// needs two descriptors per proxied connection.
type descriptorLimit struct {
	// Idle is the number of idle connections the limit allows (n, or
	// fewer when it could not be raised enough).
	Idle int
	// Limit is the soft limit in force.
	Limit uint64
	// Note says what was done or why the limit could not be raised.
	Note string
}

// descriptorsFor is the limit a process needs for n idle connections: a
// balancer holds two sockets per connection, and one that splices (Go's
// splice keeps a pipe per direction while it waits for bytes) four pipe
// descriptors more; and room for the rest.
func descriptorsFor(n int) uint64 { return uint64(6*n + 4096) }

// raiseDescriptorLimit raises this process's RLIMIT_NOFILE (inherited by
// the balancers, replicas and competitors it starts) to what n idle
// connections need: as root soft and hard, else the soft up to the hard
// limit. When that is not enough it lowers Idle to what fits and says
// why.
func raiseDescriptorLimit(n int) descriptorLimit {
	need := descriptorsFor(n)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return descriptorLimit{Idle: 0, Note: fmt.Sprintf("cannot read RLIMIT_NOFILE: %v", err)}
	}
	note := fmt.Sprintf("RLIMIT_NOFILE was %d (hard %d)", lim.Cur, lim.Max)
	if lim.Cur >= need {
		return descriptorLimit{Idle: n, Limit: lim.Cur, Note: note + ", enough"}
	}
	set := func(want syscall.Rlimit) bool {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			note += fmt.Sprintf("; raising it to %d failed: %v", want.Cur, err)
			if errors.Is(err, syscall.EPERM) {
				note += " (raising the hard limit needs root with CAP_SYS_RESOURCE, which this process lacks)"
			}
			return false
		}
		lim = want
		note += fmt.Sprintf("; raised to %d", lim.Cur)
		return true
	}
	if lim.Max < need {
		// The hard limit too: root only.
		set(syscall.Rlimit{Cur: need, Max: need})
	}
	if lim.Cur < need && lim.Cur < lim.Max {
		set(syscall.Rlimit{Cur: min(need, lim.Max), Max: lim.Max})
	}
	if lim.Cur >= need {
		return descriptorLimit{Idle: n, Limit: lim.Cur, Note: note}
	}
	fit := max(int(lim.Cur)-4096, 0) / 6
	return descriptorLimit{Idle: fit, Limit: lim.Cur,
		Note: fmt.Sprintf("%s; %d idle connections need %d descriptors, so %d were opened", note, n, need, fit)}
}
