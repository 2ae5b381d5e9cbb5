package client

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// identity is what a call through a front door adds to the caller's
// headers to name it to a replicated group's bridge: Fulcrum-Session and
// Fulcrum-Sequence, each nil when the caller set it (or set an
// Idempotency-Key, which names the call alone). The same identity goes
// with every attempt of the call, so that the group's log deduplicates a
// re-sent call. Immutable.
type identity struct {
	session, seq []string
}

// sequencer hands out a Transport's Fulcrum-Sequence numbers: a counter
// from a random start, so that numbers are unique within the Transport's
// session for 2^64 calls, and a restarted process that keeps its ClientID
// (the session) does not reuse the numbers of its previous life while the
// session lives on the log (replicated.session_ttl). Never 0. Safe for
// concurrent use.
type sequencer struct {
	next atomic.Uint64
}

func newSequencer() *sequencer {
	s := &sequencer{}
	s.next.Store(rand.Uint64())
	return s
}

// take returns a fresh sequence number.
func (s *sequencer) take() uint64 {
	for {
		if n := s.next.Add(1); n != 0 {
			return n
		}
	}
}

// identityOf returns the identity of a call of req: the headers among
// Fulcrum-Session (this Transport's ClientID) and a fresh Fulcrum-Sequence
// that req does not carry; none when req carries an Idempotency-Key.
func (t *Transport) identityOf(req *http.Request) identity {
	h := req.Header
	if len(h[protocol.HeaderIdempotencyKey]) > 0 {
		return identity{}
	}
	var id identity
	if len(h[protocol.HeaderSession]) == 0 {
		id.session = t.idValue
	}
	if len(h[protocol.HeaderSequence]) == 0 {
		id.seq = []string{strconv.FormatUint(t.seq.take(), 10)}
	}
	return id
}

// set adds the identity to h, the header of an attempt to a front door.
func (id identity) set(h http.Header) {
	if id.session != nil {
		h[protocol.HeaderSession] = id.session
	}
	if id.seq != nil {
		h[protocol.HeaderSequence] = id.seq
	}
}

// replicatedDoors remembers the front doors (keyed as their binding is)
// whose answers carried Fulcrum-Position: a replicated group's bridges.
// A call to one of them is re-sent after a transport error. Safe for
// concurrent use.
type replicatedDoors struct {
	m sync.Map // doorKey → struct{}
}

func (r *replicatedDoors) known(k doorKey) bool {
	_, ok := r.m.Load(k)
	return ok
}

func (r *replicatedDoors) learn(k doorKey) {
	if !r.known(k) {
		r.m.Store(k, struct{}{})
	}
}

// forget drops k: its front door now redirects, so its group is no
// longer replicated.
func (r *replicatedDoors) forget(k doorKey) {
	if r.known(k) {
		r.m.Delete(k)
	}
}

// isOrdered reports whether resp is a replicated group's answer to an
// ordered call: it names the call's log position.
func isOrdered(resp *http.Response) bool {
	return resp.Header.Get(protocol.HeaderPosition) != ""
}

// retryLater reports whether resp is a replicated front door's 503 with
// Retry-After: the call is worth sending to the next front door.
func retryLater(resp *http.Response) bool {
	return resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != ""
}

// readWhole reads the body of resp, a replicated front door's answer, to
// its end before it is returned, so that an answer cut short is an error
// of the call (which is then re-sent) rather than of the caller's read. It
// keeps at most limit bytes: the rest of a longer body is streamed as is
// (and a cut in it reaches the caller); a negative limit reads nothing.
// The answer to an upgrade (101) is left alone. On error it closes the
// body. host names the front door in the error.
func readWhole(resp *http.Response, host string, limit int64) error {
	if limit < 0 || resp.StatusCode == http.StatusSwitchingProtocols || resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	buf, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		resp.Body.Close()
		return fmt.Errorf("client: reply from %s cut short after %d bytes: %w", host, len(buf), err)
	}
	if int64(len(buf)) > limit {
		resp.Body = &peekedBody{Reader: io.MultiReader(bytes.NewReader(buf), resp.Body), Closer: resp.Body}
		return nil
	}
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(buf))
	resp.ContentLength = int64(len(buf))
	return nil
}
