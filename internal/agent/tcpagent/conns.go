package tcpagent

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tcpEstablished is the st column of an ESTABLISHED socket in
// /proc/net/tcp (include/net/tcp_states.h: TCP_ESTABLISHED = 1).
const tcpEstablished = "01"

// CountEstablished counts the ESTABLISHED sockets of a /proc/net/tcp or
// /proc/net/tcp6 table whose local port is port and, when ip is valid,
// whose local address is ip (an IPv4 address also matches its
// IPv4-mapped form in tcp6): the replica's side of its clients'
// connections. Connections the replica makes itself have an ephemeral
// local port and are not counted; with ip, neither are sockets of the
// same namespace bound to the port on another address. A line that does
// not parse is an error naming its number.
func CountEstablished(table io.Reader, ip netip.Addr, port uint16) (int, error) {
	sc := bufio.NewScanner(table)
	sc.Buffer(make([]byte, 0, 512), 64<<10)
	n, line := 0, 0
	for sc.Scan() {
		line++
		if line == 1 {
			continue // the header
		}
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 {
			return 0, fmt.Errorf("tcpagent: line %d: %d fields, want at least 4 (sl local_address rem_address st)", line, len(f))
		}
		local := f[1]
		i := bytes.LastIndexByte(local, ':')
		if i < 0 {
			return 0, fmt.Errorf("tcpagent: line %d: local address %q is not ADDR:PORT", line, local)
		}
		p, err := strconv.ParseUint(string(local[i+1:]), 16, 16)
		if err != nil {
			return 0, fmt.Errorf("tcpagent: line %d: local port %q is not 4 hex digits", line, local[i+1:])
		}
		if uint16(p) != port || string(f[3]) != tcpEstablished {
			continue
		}
		if ip.IsValid() {
			addr, ok := procAddr(local[:i])
			if !ok {
				return 0, fmt.Errorf("tcpagent: line %d: local address %q is not 8 or 32 hex digits", line, local[:i])
			}
			if addr.Unmap() != ip.Unmap() {
				continue
			}
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("tcpagent: %w", err)
	}
	return n, nil
}

// procAddr parses a /proc/net/tcp address: 8 (IPv4) or 32 (IPv6) hex
// digits, each 32-bit word printed as the host reads it from the
// network-order bytes.
func procAddr(h []byte) (netip.Addr, bool) {
	if len(h) != 8 && len(h) != 32 {
		return netip.Addr{}, false
	}
	b := make([]byte, len(h)/2)
	for w := 0; w < len(h)/8; w++ {
		v, err := strconv.ParseUint(string(h[w*8:w*8+8]), 16, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		binary.NativeEndian.PutUint32(b[w*4:], uint32(v))
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr, true
}

// NetDir finds the proc net directory (holding tcp and tcp6) of the
// replica's network namespace.
type NetDir func() (string, error)

// PidNet is the net directory of process pid's network namespace,
// /proc/PID/net (proc: the proc mount point, default /proc).
func PidNet(proc string, pid int) NetDir {
	if proc == "" {
		proc = "/proc"
	}
	dir := filepath.Join(proc, strconv.Itoa(pid), "net")
	return func() (string, error) {
		if _, err := os.Stat(filepath.Join(dir, "tcp")); err != nil {
			return "", fmt.Errorf("tcpagent: process %d: %w", pid, err)
		}
		return dir, nil
	}
}

// CgroupNet is the net directory of the first process listed in the
// cgroup directory dir (cgroup.procs), looked up at each call: the
// replica's processes may come and go.
func CgroupNet(proc, dir string) NetDir {
	if proc == "" {
		proc = "/proc"
	}
	return func() (string, error) {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return "", fmt.Errorf("tcpagent: cgroup %s: %w", dir, err)
		}
		for _, s := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(s); err == nil && pid > 0 {
				return PidNet(proc, pid)()
			}
		}
		return "", fmt.Errorf("tcpagent: cgroup %s has no process, so no network namespace to count connections in", dir)
	}
}

// Connections counts a replica's client connections: the ESTABLISHED
// sockets with local port Port (and local address IP, when valid: a
// target on a wildcard address or given by name matches any) in the tcp
// and tcp6 tables of the net directory Dir gives (tcp6 may be absent:
// IPv6 off).
type Connections struct {
	Dir  NetDir
	IP   netip.Addr
	Port uint16
}

// Count reads the tables once.
func (c Connections) Count() (int, error) {
	dir, err := c.Dir()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(dir, name))
		if name == "tcp6" && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("tcpagent: %w", err)
		}
		n, err := CountEstablished(f, c.IP, c.Port)
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("%w (in %s)", err, f.Name())
		}
		total += n
	}
	return total, nil
}
