package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
)

// Addresses: replica subnets are 10.77.<s>.0/24, s in 1..254, the root
// namespace's end of the veth pair 10.77.<s>.1 (the replica's gateway)
// and the replica's 10.77.<s>.2. A subnet is free when no address of the
// root namespace is in it; the choice and the address assignment happen
// under a lock file shared by every process, so that parallel testbeds
// never pick the same subnet.
var subnetRe = regexp.MustCompile(`inet 10\.77\.([0-9]+)\.[0-9]+/`)

// lockPath is the lock file serialising subnet choices between
// processes.
var lockPath = filepath.Join(os.TempDir(), "fulcrum-testbed.lock")

// linkUp creates the veth pair host/peer with peer in namespace ns,
// chooses a free subnet, gives the host end its .1 address and brings it
// up. It returns the subnet's third octet.
func (tb *Testbed) linkUp(ns, host, peer string) (byte, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return 0, fmt.Errorf("testbed: subnet lock: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("testbed: subnet lock %s: %w", lockPath, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)

	out, err := run(tb.tools.ip, "-o", "-4", "addr", "show")
	if err != nil {
		return 0, err
	}
	used := map[int]bool{}
	for _, m := range subnetRe.FindAllStringSubmatch(out, -1) {
		if s, err := strconv.Atoi(m[1]); err == nil {
			used[s] = true
		}
	}
	sub := 0
	for s := 1; s <= 254; s++ {
		if !used[s] {
			sub = s
			break
		}
	}
	if sub == 0 {
		return 0, errors.New("no free subnet in 10.77.0.0/16 (254 replicas on this machine)")
	}
	gw := fmt.Sprintf("10.77.%d.1/24", sub)
	for _, args := range [][]string{
		{"link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns},
		{"addr", "add", gw, "dev", host},
		{"link", "set", host, "up"},
	} {
		if _, err := run(tb.tools.ip, args...); err != nil {
			return 0, err
		}
	}
	return byte(sub), nil
}
