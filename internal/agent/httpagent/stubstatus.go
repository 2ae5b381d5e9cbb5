package httpagent

import (
	"fmt"
	"strconv"
	"strings"
)

// StubStatus is one reading of NGINX's stub_status page
// (ngx_http_stub_status_module):
//
//	Active connections: 291
//	server accepts handled requests
//	 16630948 16630948 31070465
//	Reading: 6 Writing: 179 Waiting: 106
type StubStatus struct {
	// Active is the client connections open now, idle ones included.
	Active int64
	// Accepts, Handled and Requests are counters since NGINX started:
	// connections accepted, connections handled, requests read.
	Accepts, Handled, Requests int64
	// Reading is the connections whose request header NGINX is reading,
	// Writing those whose request it is processing or answering, Waiting
	// the idle keep-alive connections.
	Reading, Writing, Waiting int64
}

// InProgress is the requests NGINX is working on: being read or answered.
func (s StubStatus) InProgress() int64 { return s.Reading + s.Writing }

// ParseStubStatus parses a stub_status page. Every number must be there;
// anything else is an error naming what is missing or malformed.
func ParseStubStatus(page []byte) (StubStatus, error) {
	var s StubStatus
	lines := strings.Split(strings.TrimSpace(string(page)), "\n")
	if len(lines) < 4 {
		return s, fmt.Errorf("stub_status: %d lines, want 4 (is the URL an NGINX stub_status location?)", len(lines))
	}
	active, ok := strings.CutPrefix(strings.TrimSpace(lines[0]), "Active connections:")
	if !ok {
		return s, fmt.Errorf("stub_status: line 1 %q: want \"Active connections: N\"", lines[0])
	}
	var err error
	if s.Active, err = count(active); err != nil {
		return s, fmt.Errorf("stub_status: active connections: %w", err)
	}
	counters := strings.Fields(lines[2])
	if len(counters) != 3 {
		return s, fmt.Errorf("stub_status: line 3 %q: want three counters (accepts handled requests)", lines[2])
	}
	for i, dst := range []*int64{&s.Accepts, &s.Handled, &s.Requests} {
		if *dst, err = count(counters[i]); err != nil {
			return s, fmt.Errorf("stub_status: counter %d: %w", i+1, err)
		}
	}
	f := strings.Fields(lines[3])
	if len(f) != 6 || f[0] != "Reading:" || f[2] != "Writing:" || f[4] != "Waiting:" {
		return s, fmt.Errorf("stub_status: line 4 %q: want \"Reading: N Writing: N Waiting: N\"", lines[3])
	}
	for i, dst := range []*int64{&s.Reading, &s.Writing, &s.Waiting} {
		if *dst, err = count(f[2*i+1]); err != nil {
			return s, fmt.Errorf("stub_status: %s %w", strings.ToLower(f[2*i]), err)
		}
	}
	return s, nil
}

func count(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a count", strings.TrimSpace(s))
	}
	return n, nil
}
