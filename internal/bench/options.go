package bench

import (
	"fmt"
	"io"
)

// Size is how long an experiment runs.
type Size int

const (
	// Full is the papers' size (200,000 calls for overhead, as in the
	// paper).
	Full Size = iota
	// Quick is the shortest run whose figures still mean something:
	// enough calls for a p99, long enough for an equilibrium window.
	Quick
	// Smoke only proves that every configuration runs and that the
	// output is valid: seconds, for CI.
	Smoke
)

func (s Size) String() string {
	switch s {
	case Full:
		return "full"
	case Quick:
		return "quick"
	case Smoke:
		return "smoke"
	}
	return fmt.Sprintf("Size(%d)", int(s))
}

// Pick returns full, quick or smoke according to s.
func Pick[T any](s Size, full, quick, smoke T) T {
	switch s {
	case Quick:
		return quick
	case Smoke:
		return smoke
	}
	return full
}

// Protocols the bench can run over.
const (
	ProtocolHTTP = "http"
	// ProtocolGIOP runs the overhead and effectiveness experiments over
	// CORBA GIOP/IIOP (giop.go).
	ProtocolGIOP = "giop"
)

// ORBs a GIOP run can use.
const (
	// ORBGo is fulcrum's own: the Go Prime servant (fulcrum backend prime
	// --giop) and fulcrum's client ORB.
	ORBGo = "go"
	// ORBOmniORB is omniORB C++: prime_server replicas, each behind
	// "fulcrum agent giop", and prime_client processes (omniorb.go).
	ORBOmniORB = "omniorb"
)

// Options configure a bench run.
type Options struct {
	// Out is the output directory. Empty: ./bench-results/<name>-<time>.
	// With several experiments (bench all), each writes into a
	// subdirectory of Out named after it.
	Out string
	// Size is Full, Quick or Smoke.
	Size Size
	// Protocol is the protocol the replicas and balancers speak:
	// ProtocolHTTP (the default) or ProtocolGIOP (overhead and
	// effectiveness only).
	Protocol string
	// ORB is the ORB of a GIOP run's replicas and clients: ORBGo (the
	// default) or ORBOmniORB.
	ORB string
	// Command is the command line as typed, recorded in results.json.
	Command string
	// Binary is the fulcrum executable that replicas, balancers and
	// client processes run. Default: this process's executable.
	Binary string
	// HAProxy and NGINX are the competitors' executables. Empty: looked
	// up in PATH, then /usr/sbin. A path that does not exist marks the
	// competitor's rows skipped.
	HAProxy, NGINX string
	// Profile has every balancer write a CPU profile (pprof) of itself,
	// front doors included, to logs/<name>.cpu.pprof.
	Profile bool
	// Progress receives one line per step (default discarded).
	Progress io.Writer
}

func (o *Options) validate() error {
	if o.Protocol == "" {
		o.Protocol = ProtocolHTTP
	}
	if o.Protocol != ProtocolHTTP && o.Protocol != ProtocolGIOP {
		return fmt.Errorf("bench: --protocol %q: must be %q or %q", o.Protocol, ProtocolHTTP, ProtocolGIOP)
	}
	if o.ORB == "" {
		o.ORB = ORBGo
	}
	if o.ORB != ORBGo && o.ORB != ORBOmniORB {
		return fmt.Errorf("bench: --orb %q: must be %q or %q", o.ORB, ORBGo, ORBOmniORB)
	}
	if o.ORB == ORBOmniORB && o.Protocol != ProtocolGIOP {
		return fmt.Errorf("bench: --orb %q: needs --protocol %q", o.ORB, ProtocolGIOP)
	}
	if o.Size < Full || o.Size > Smoke {
		return fmt.Errorf("bench: invalid size %d", o.Size)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return nil
}
