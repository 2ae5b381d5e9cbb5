package client

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Binding is a client's binding to a replica of a group.
type Binding struct {
	// Group is the group's name (Fulcrum-Group).
	Group string
	// Replica is the bound replica's id (Fulcrum-Replica).
	Replica string
	// URL is the replica's base URL.
	URL string
}

// binding is a Binding as the transport uses it. Immutable.
type binding struct {
	Binding
	// header is the Fulcrum-Binding value, "<group>/<replica>".
	header string
	// headerValue is []string{header}, shared by the calls' headers;
	// read-only.
	headerValue []string
	scheme      string
	host        string
	// prefix is the replica's base path (escaped), without a trailing
	// slash; usually empty.
	prefix string
}

// rewrite returns u pointed at the replica: same path (under the replica's
// base path) and query.
func (b *binding) rewrite(u *url.URL) *url.URL {
	out := *u
	out.Scheme, out.Host = b.scheme, b.host
	if b.prefix != "" {
		escaped := b.prefix + u.EscapedPath()
		if p, err := url.PathUnescape(escaped); err == nil {
			out.Path, out.RawPath = p, escaped
		}
	}
	return &out
}

// bindingFrom reads the binding a front door's 307 gives, for a request to
// reqURL. It needs Fulcrum-Group, Fulcrum-Replica and a Location that is
// the replica's base URL followed by the request's path; false otherwise.
func bindingFrom(resp *http.Response, reqURL *url.URL) (*binding, bool) {
	group := resp.Header.Get(protocol.HeaderGroup)
	replica := resp.Header.Get(protocol.HeaderReplica)
	loc := resp.Header.Get("Location")
	if group == "" || replica == "" || loc == "" {
		return nil, false
	}
	lu, err := reqURL.Parse(loc)
	if err != nil || (lu.Scheme != "http" && lu.Scheme != "https") || lu.Host == "" {
		return nil, false
	}
	path, lpath := escapedPath(reqURL), escapedPath(lu)
	if !strings.HasSuffix(lpath, path) {
		return nil, false
	}
	prefix := strings.TrimRight(lpath[:len(lpath)-len(path)], "/")
	base := lu.Scheme + "://" + lu.Host + prefix
	header := group + "/" + replica
	return &binding{
		Binding:     Binding{Group: group, Replica: replica, URL: base},
		header:      header,
		headerValue: []string{header},
		scheme:      lu.Scheme,
		host:        lu.Host,
		prefix:      prefix,
	}, true
}

func escapedPath(u *url.URL) string {
	if p := u.EscapedPath(); p != "" {
		return p
	}
	return "/"
}

// doorKey identifies a front door by the scheme and host a caller uses.
type doorKey struct {
	scheme, host string
}

func keyOf(u *url.URL) doorKey {
	return doorKey{scheme: u.Scheme, host: u.Host}
}

// frontDoor is what the transport knows of one front door.
type frontDoor struct {
	// binding is the current binding, nil when there is none.
	binding atomic.Pointer[binding]
}

// drop forgets b if it is still the current binding, and reports whether
// it was.
func (d *frontDoor) drop(b *binding) bool {
	return d.binding.CompareAndSwap(b, nil)
}

// doors maps front doors to their state. Entries are created when a front
// door first answers with a binding redirect and are never removed (a
// process talks to a handful of front doors). Safe for concurrent use.
type doors struct {
	mu sync.RWMutex
	m  map[doorKey]*frontDoor
}

// get returns the front door for k, or nil if none answered yet.
func (ds *doors) get(k doorKey) *frontDoor {
	ds.mu.RLock()
	defer ds.mu.RUnlock()
	return ds.m[k]
}

// getOrAdd returns the front door for k, adding it if needed.
func (ds *doors) getOrAdd(k doorKey) *frontDoor {
	if d := ds.get(k); d != nil {
		return d
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if d := ds.m[k]; d != nil {
		return d
	}
	if ds.m == nil {
		ds.m = make(map[doorKey]*frontDoor)
	}
	d := &frontDoor{}
	ds.m[k] = d
	return d
}
