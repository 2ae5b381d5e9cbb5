package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Env is what an experiment runs in: its output directory, the fulcrum
// binary, the machine and the competitors, and the processes it started.
// Fixtures (StartBalancer, StartReplica, StartHAProxy, StartNGINX,
// RunClients) start real processes that Close kills. Safe for concurrent
// use.
type Env struct {
	// Dir is the experiment's output directory; logs go to Dir/logs.
	Dir string
	// Size is the run's size.
	Size Size
	// Protocol is the replicas' protocol ("http").
	Protocol string
	// ORB is a GIOP run's ORB (ORBGo or ORBOmniORB).
	ORB string
	// Binary is the fulcrum executable.
	Binary string
	// Machine describes this machine, competitors' versions included.
	Machine Machine
	// HAProxy and NGINX are the competitors; Path is "" when missing.
	HAProxy, NGINX Tool
	// Profile has balancers write CPU profiles into Dir/logs.
	Profile bool

	progress io.Writer
	began    time.Time
	scratch  string // data dirs and prefixes; removed by Close

	omni omniBuild // the omniORB programs, built once (omniorb.go)

	mu     sync.Mutex
	procs  []*Proc
	names  map[string]int
	closed bool
}

// NewEnv prepares an environment writing into dir (created if missing).
// The caller must Close it.
func NewEnv(ctx context.Context, dir string, o Options) (*Env, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	bin := o.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("bench: cannot find the fulcrum executable: %w", err)
		}
		bin = exe
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("bench: fulcrum executable: %w", err)
	}
	// Absolute: NGINX resolves the relative paths of its command line
	// against its prefix (-p), not against the working directory.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("bench: output directory: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("bench: output directory: %w", err)
	}
	scratch, err := os.MkdirTemp("", "fulcrum-bench-")
	if err != nil {
		return nil, err
	}
	e := &Env{
		Dir: dir, Size: o.Size, Protocol: o.Protocol, ORB: o.ORB, Binary: bin, Profile: o.Profile,
		HAProxy:  findTool(ctx, toolHAProxy, o.HAProxy),
		NGINX:    findTool(ctx, toolNGINX, o.NGINX),
		progress: o.Progress, began: time.Now(), scratch: scratch,
		names: map[string]int{},
	}
	e.Machine = Machine{
		CPUs: runtime.NumCPU(), OS: describeOS(), Go: runtime.Version(),
		HAProxy: e.HAProxy.Version, NGINX: e.NGINX.Version,
	}
	for _, t := range []Tool{e.HAProxy, e.NGINX} {
		if t.Missing != "" {
			e.Logf("%s; its rows are marked skipped", t.Missing)
		}
	}
	return e, nil
}

// Logf writes one progress line, prefixed with the time since the
// environment was made.
func (e *Env) Logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	fmt.Fprintf(e.progress, "[%6.1fs] %s\n", time.Since(e.began).Seconds(), strings.TrimRight(line, "\n"))
}

// Path returns the path of an output file in Dir.
func (e *Env) Path(name string) string { return filepath.Join(e.Dir, name) }

// ScratchDir returns a fresh directory under the scratch space, for a
// balancer's data or NGINX's prefix.
func (e *Env) ScratchDir(name string) (string, error) {
	return os.MkdirTemp(e.scratch, name+"-")
}

// UniqueName returns name, or name-2, name-3, ... when taken, for log
// files.
func (e *Env) UniqueName(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.names[name]++
	if n := e.names[name]; n > 1 {
		return fmt.Sprintf("%s-%d", name, n)
	}
	return name
}

func (e *Env) track(p *Proc) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("bench: environment closed")
	}
	e.procs = append(e.procs, p)
	return nil
}

// Close stops every process the environment started (SIGTERM to its
// process group, SIGKILL after a grace period) and removes the scratch
// space. It is safe to call more than once.
func (e *Env) Close() {
	e.mu.Lock()
	procs := slices.Clone(e.procs)
	e.procs = nil
	e.closed = true
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Stop(3 * time.Second)
		}()
	}
	wg.Wait()
	if e.scratch != "" {
		_ = os.RemoveAll(e.scratch)
	}
}
