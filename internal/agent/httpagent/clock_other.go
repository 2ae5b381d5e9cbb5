//go:build !linux

package httpagent

import "time"

// processClock is not available here: ProcCPU counts /proc's ticks.
func processClock(int) (time.Duration, bool) { return 0, false }
