package httpagent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// TestProcCPUCountsChildren burns CPU in a child of a shell and reads it
// through the shell's pid.
func TestProcCPUCountsChildren(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sh -c 'while :; do :; done' & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	src := ProcCPU{Pids: []int{cmd.Process.Pid}}
	start, err := src.Usage()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	proctest.Poll(ctx, t, "the busy child's CPU time counted through the shell's pid", func() (bool, string) {
		used, err := src.Usage()
		if err != nil {
			t.Fatal(err)
		}
		return used-start >= 200*time.Millisecond, fmt.Sprintf("grew %v, want >= 200ms", used-start)
	})
}

func TestProcCPUNoProcess(t *testing.T) {
	_, err := ProcCPU{Pids: []int{1 << 30}}.Usage()
	if err == nil || !strings.Contains(err.Error(), "none of the processes") {
		t.Fatalf("error %v, want none of the processes is running", err)
	}
}

func TestReadProcStatCommandWithSpaces(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "42"), 0o755)
	// comm ") x (" with spaces and parentheses; fields 3.. after it.
	line := "42 (a ) b) S 7 42 42 0 -1 4194560 100 0 0 0 150 50 3 4 20 0 1 0 100 0 0\n"
	if err := os.WriteFile(filepath.Join(dir, "42", "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := readProcStat(dir, 42)
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != 7 || st.utime != 150 || st.stime != 50 || st.cu != 3 || st.cs != 4 {
		t.Fatalf("parsed %+v", st)
	}
	used, err := ProcCPU{Pids: []int{42}, Proc: dir}.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if used != 2070*time.Millisecond { // (150+50+3+4) ticks of 10ms
		t.Fatalf("usage %v, want 2.07s", used)
	}
}

func TestResolveCgroup(t *testing.T) {
	root := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// v1 with separate cpu and cpuacct hierarchies (this machine's
	// layout): quota 5 ms per 10 ms period, half a core.
	write("cpuacct/tb/r1/cpuacct.usage", "1500000000\n")
	write("cpu/tb/r1/cpu.cfs_quota_us", "5000\n")
	write("cpu/tb/r1/cpu.cfs_period_us", "10000\n")
	// v2: cpu.max and cpu.stat in one directory.
	write("tb2/r1/cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")
	write("tb2/r1/cpu.max", "25000 100000\n")
	// v1 without quota.
	write("cpuacct/free/cpuacct.usage", "7\n")
	write("cpu/free/cpu.cfs_quota_us", "-1\n")
	write("cpu/free/cpu.cfs_period_us", "100000\n")

	for _, tc := range []struct {
		name  string
		cores float64
		used  time.Duration
	}{
		{"tb/r1", 0.5, 1500 * time.Millisecond},
		{filepath.Join(root, "cpuacct/tb/r1"), 0.5, 1500 * time.Millisecond},
		{"tb2/r1", 0.25, 2500 * time.Millisecond},
	} {
		src, cores, err := ResolveCgroup(root, tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if cores != tc.cores {
			t.Errorf("%s: cores %v, want %v", tc.name, cores, tc.cores)
		}
		if used, err := src.Usage(); err != nil || used != tc.used {
			t.Errorf("%s: usage %v, %v; want %v", tc.name, used, err, tc.used)
		}
	}
	if _, cores, err := ResolveCgroup(root, "free"); err != nil || cores < 1 {
		t.Errorf("cgroup without quota: cores %v, %v; want the machine's", cores, err)
	}
	for _, bad := range []string{"", "missing", "../etc"} {
		if _, _, err := ResolveCgroup(root, bad); err == nil {
			t.Errorf("ResolveCgroup(%q) succeeded", bad)
		}
	}
}
