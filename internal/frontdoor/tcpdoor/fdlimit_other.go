//go:build !unix

package tcpdoor

// descriptorLimit is the process's descriptor limit (0: unknown).
func descriptorLimit() uint64 { return 0 }
