package bench

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// Machine describes where a bench ran. The JSON names are results.json's.
type Machine struct {
	CPUs int    `json:"cpus"`
	OS   string `json:"os"`
	Go   string `json:"go"`
	// HAProxy and NGINX are the competitors' versions, "" when missing.
	HAProxy string `json:"haproxy"`
	NGINX   string `json:"nginx"`
}

// Tool is an external program the bench starts (a competitor).
type Tool struct {
	// Name is the program's name, e.g. "haproxy".
	Name string
	// Path is its executable, "" when missing.
	Path string
	// Version is what it says its version is, "" when missing.
	Version string
	// Missing says why it cannot be used and how to install it.
	Missing string
}

// The competitors' Debian packages.
const (
	toolHAProxy = "haproxy"
	toolNGINX   = "nginx"
)

var versionRe = regexp.MustCompile(`\d+\.\d+(\.\d+)?`)

// findTool locates a competitor: path when given, else PATH, else
// /usr/sbin (where Debian puts both, outside a normal user's PATH). It
// asks the program for its version.
func findTool(ctx context.Context, name, path string) Tool {
	t := Tool{Name: name}
	if path == "" {
		if p, err := exec.LookPath(name); err == nil {
			path = p
		} else if p, err := exec.LookPath("/usr/sbin/" + name); err == nil {
			path = p
		}
	}
	if path == "" {
		t.Missing = name + " is not installed (apt-get install " + name + ")"
		return t
	}
	if _, err := exec.LookPath(path); err != nil {
		t.Missing = name + " cannot be run: " + err.Error() + " (apt-get install " + name + ")"
		return t
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// haproxy -v prints to stdout, nginx -v to stderr.
	out, err := exec.CommandContext(ctx, path, "-v").CombinedOutput()
	if err != nil {
		t.Missing = name + " at " + path + " does not run: " + strings.TrimSpace(err.Error()) + " (apt-get install " + name + ")"
		return t
	}
	t.Path = path
	t.Version = versionRe.FindString(string(out))
	return t
}

// describeOS is the OS name, architecture and kernel, e.g. "Debian
// GNU/Linux 12 (bookworm), linux/amd64, kernel 6.1.0-18-amd64".
func describeOS() string {
	parts := []string{}
	if f, err := os.Open("/etc/os-release"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
				parts = append(parts, strings.Trim(v, `"'`))
			}
		}
		f.Close()
	}
	parts = append(parts, runtime.GOOS+"/"+runtime.GOARCH)
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		parts = append(parts, "kernel "+strings.TrimSpace(string(b)))
	}
	return strings.Join(parts, ", ")
}
