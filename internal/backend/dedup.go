package backend

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
)

// HeaderIdempotencyKey names a request: requests with the same key are one
// call (fulcrum's replicated groups send their replicas' outgoing calls with
// "<group>/<position>/<index>").
const HeaderIdempotencyKey = "Idempotency-Key"

// DefaultDedupKeys is how many keys a Dedup remembers by default: as many
// outgoing calls as a balancer keeps the replies of.
const DefaultDedupKeys = 10_000

// maxDedupReply bounds a reply a Dedup keeps; a larger one is passed on
// and not kept (a later copy of its key runs again).
const maxDedupReply = 64 << 10

// Dedup makes a handler apply each Idempotency-Key once: the first request
// with a key runs next and its reply (status, headers, body) is kept; a
// later request with the key gets that reply without running next (one
// that comes while the first runs waits for it). Requests without the
// header run as they are. It remembers the last Keys keys (the oldest is
// forgotten first, and a request with a forgotten key runs again), each
// reply at most 64 KiB: memory stays bounded. Safe for concurrent use.
type Dedup struct {
	next http.Handler
	max  int

	mu    sync.Mutex
	calls map[string]*dedupCall
	order []string // keys, oldest first: a ring of max entries
	head  int
	dups  uint64
}

// dedupCall is one key's first request: done closes when its reply is set.
type dedupCall struct {
	done   chan struct{}
	status int
	header http.Header
	body   []byte
	kept   bool
}

// NewDedup returns next applying each Idempotency-Key once, remembering
// the last keys keys (DefaultDedupKeys when keys <= 0).
func NewDedup(next http.Handler, keys int) *Dedup {
	if keys <= 0 {
		keys = DefaultDedupKeys
	}
	return &Dedup{next: next, max: keys, calls: make(map[string]*dedupCall)}
}

// Duplicates is how many requests got a kept reply instead of running.
func (d *Dedup) Duplicates() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dups
}

// ServeHTTP implements http.Handler.
func (d *Dedup) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get(HeaderIdempotencyKey)
	if key == "" {
		d.next.ServeHTTP(w, r)
		return
	}
	d.mu.Lock()
	c, seen := d.calls[key]
	if !seen {
		c = &dedupCall{done: make(chan struct{})}
		d.remember(key, c)
	}
	d.mu.Unlock()
	if seen {
		select {
		case <-c.done:
		case <-r.Context().Done():
			return
		}
		if !c.kept {
			d.next.ServeHTTP(w, r) // its reply was too large to keep
			return
		}
		d.mu.Lock()
		d.dups++
		d.mu.Unlock()
		for k, vs := range c.header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(c.body)))
		w.WriteHeader(c.status)
		_, _ = w.Write(c.body)
		return
	}
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		c.status, c.header, c.kept = rec.status, w.Header().Clone(), rec.body.Len() <= maxDedupReply
		c.body = bytes.Clone(rec.body.Bytes())
		if !c.kept {
			c.body = nil
		}
		close(c.done)
	}()
	d.next.ServeHTTP(rec, r)
}

// remember adds key, forgetting the oldest key when full. Caller must hold
// d.mu.
func (d *Dedup) remember(key string, c *dedupCall) {
	if len(d.order) < d.max {
		d.order = append(d.order, key)
	} else {
		delete(d.calls, d.order[d.head])
		d.order[d.head] = key
		d.head = (d.head + 1) % d.max
	}
	d.calls[key] = c
}

// recorder passes a reply on and keeps a copy of its status and of up to
// maxDedupReply+1 bytes of its body.
type recorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wroteHeader = true
	if room := maxDedupReply + 1 - r.body.Len(); room > 0 {
		r.body.Write(p[:min(len(p), room)])
	}
	return r.ResponseWriter.Write(p)
}
