package failpoint

// ImportPath is this package's import path, which the failpoint build
// adds to the imports of a rewritten file whose failpoints call Kill.
const ImportPath = "github.com/fulcrum-lb/fulcrum/internal/failpoint"

// Kill ends the process at once with SIGKILL, as a crash would: no
// deferred function, no finalizer, no exit hook runs, nothing buffered is
// flushed and no connection is closed cleanly (the kernel closes them).
// It never returns.
func Kill() {
	kill()
}
