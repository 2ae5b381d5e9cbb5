package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ErrNotRoot is wrapped by New's error when the process is not root.
var ErrNotRoot = errors.New("testbed: needs root (network namespaces, veth pairs, tc qdiscs and cgroups); run as root")

// commandTimeout bounds one ip or tc command: they return in
// milliseconds, and a hung one must not hang the testbed.
const commandTimeout = 20 * time.Second

// tools are the executables the testbed runs.
type tools struct {
	ip, tc, sh, nsenter string
}

// findTools locates ip and tc (iproute2) and nsenter (util-linux), in PATH
// or in /usr/sbin and /sbin (outside a normal user's PATH on Debian), and
// /bin/sh.
func findTools() (tools, error) {
	var t tools
	for _, x := range []struct {
		name, pkg string
		dst       *string
	}{{"ip", "iproute2", &t.ip}, {"tc", "iproute2", &t.tc}, {"sh", "dash", &t.sh}, {"nsenter", "util-linux", &t.nsenter}} {
		p, err := exec.LookPath(x.name)
		if err != nil {
			for _, dir := range []string{"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"} {
				if q, err2 := exec.LookPath(dir + x.name); err2 == nil {
					p, err = q, nil
					break
				}
			}
		}
		if err != nil {
			return tools{}, fmt.Errorf("testbed: %s not found: install %s (apt-get install %s)", x.name, x.pkg, x.pkg)
		}
		*x.dst = p
	}
	return t, nil
}

// run runs one command and returns its standard output; a failure's
// error carries the command line and what it wrote to standard error.
func run(path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("testbed: %s %s: %s", path, strings.Join(args, " "), msg)
	}
	return stdout.String(), nil
}

// Available reports whether a testbed can be made on this machine: nil,
// or an error saying what is missing (root, iproute2, a cgroup cpu
// controller). Tests that need the testbed fail on its error when
// CI=true and skip otherwise.
func Available() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	if _, err := findTools(); err != nil {
		return err
	}
	if _, err := detectCgroup(); err != nil {
		return err
	}
	return nil
}
