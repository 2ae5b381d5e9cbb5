//go:build unix

package tcpdoor

import "syscall"

// descriptorLimit is the process's soft RLIMIT_NOFILE (0: unknown).
func descriptorLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}
