//go:build linux

package proctest

import (
	"bytes"
	"sync"
)

// Output collects a process's stdout or stderr and lets tests wait for
// what it writes. Safe for concurrent use.
type Output struct {
	name    string // "stdout" or "stderr", for messages
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newOutput(name string) *Output { return &Output{name: name, changed: make(chan struct{})} }

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

// Snapshot returns what was written so far and a channel closed on the
// next write.
func (o *Output) Snapshot() (string, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String(), o.changed
}

// String returns what was written so far.
func (o *Output) String() string {
	s, _ := o.Snapshot()
	return s
}
