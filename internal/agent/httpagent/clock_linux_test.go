//go:build linux

package httpagent

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// The process clock agrees with getrusage for this process, and a process
// that has exited has none.
func TestProcessClock(t *testing.T) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	before := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	clock, ok := processClock(os.Getpid())
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	after := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	// getrusage rounds to microseconds; allow for the reads between.
	if !ok || clock < before-time.Millisecond || clock > after+time.Millisecond {
		t.Errorf("process clock %v, %v; getrusage %v then %v", clock, ok, before, after)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if d, ok := processClock(cmd.Process.Pid); ok {
		t.Errorf("an exited process's clock read %v", d)
	}
	if _, ok := processClock(0); ok {
		t.Error("pid 0 has a clock")
	}
}

// With the real /proc a live process's time comes from its clock: this
// process's usage matches its clock to well under a /proc tick.
func TestProcCPUUsesTheProcessClock(t *testing.T) {
	used, err := ProcCPU{Pids: []int{os.Getpid()}}.Usage()
	if err != nil {
		t.Fatal(err)
	}
	clock, _ := processClock(os.Getpid())
	// used includes reaped children (ticks): this test process has
	// reaped none before this test unless others ran first, so compare
	// against the clock with the children's ticks as slack.
	st, err := readProcStat("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	reaped := time.Duration(st.cu+st.cs) * (time.Second / userHZ)
	if diff := clock + reaped - used; diff < 0 || diff > time.Millisecond {
		t.Errorf("ProcCPU %v, process clock %v plus reaped children %v", used, clock, reaped)
	}
}
