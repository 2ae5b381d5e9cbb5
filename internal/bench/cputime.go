package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPUTime is the CPU time the process's live threads have used so far, to
// the nanosecond (the first field of Linux's /proc/PID/task/*/schedstat),
// and false when it cannot be read.
func (p *Proc) CPUTime() (time.Duration, bool) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(p.Pid()), "task", "*", "schedstat"))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread has just exited
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}

// CPUMeter adds up the CPU time processes use while a segment runs.
type CPUMeter struct {
	procs []*Proc
	start []time.Duration
	total time.Duration
	ok    bool
}

// NewCPUMeter meters the CPU time of procs. A meter of no processes, or
// a nil one, reports nothing (PerCall returns nil).
func NewCPUMeter(procs ...*Proc) *CPUMeter {
	return &CPUMeter{procs: procs, ok: len(procs) > 0}
}

// Begin notes the processes' CPU times before a segment.
func (m *CPUMeter) Begin() {
	if m == nil {
		return
	}
	m.start = m.start[:0]
	for _, p := range m.procs {
		t, ok := p.CPUTime()
		m.ok = m.ok && ok
		m.start = append(m.start, t)
	}
}

// End adds what they used since begin.
func (m *CPUMeter) End() {
	if m == nil {
		return
	}
	for i, p := range m.procs {
		t, ok := p.CPUTime()
		m.ok = m.ok && ok
		if i < len(m.start) && t > m.start[i] {
			m.total += t - m.start[i]
		}
	}
}

// PerCall is the CPU time per call in µs, nil when unknown.
func (m *CPUMeter) PerCall(calls int64) *float64 {
	if m == nil || !m.ok || calls <= 0 {
		return nil
	}
	v := float64(m.total) / float64(time.Microsecond) / float64(calls)
	return &v
}
