//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package monitor

import "time"

// processCPU is not available on this platform.
func processCPU() (time.Duration, bool) { return 0, false }
