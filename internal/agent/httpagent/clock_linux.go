//go:build linux

package httpagent

import (
	"syscall"
	"time"
	"unsafe"
)

// processClock returns the CPU time a live process (all its threads) has
// used, to the nanosecond: clock_gettime on its process CPU clock
// (MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) = ^pid<<3 | 2, as
// clock_getcpuclockid(3) gives). False when the process is gone or the
// clock cannot be read.
func processClock(pid int) (time.Duration, bool) {
	if pid <= 0 {
		return 0, false
	}
	id := (^uintptr(pid) << 3) | 2
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, id, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
