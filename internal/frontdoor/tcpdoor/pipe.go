package tcpdoor

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// This file copies a proxied connection's bytes both ways. Each direction
// copies chunks of at most chunkSize with io.Copy from an
// *io.LimitedReader over the raw source connection into the raw
// destination (*net.TCPConn to *net.TCPConn): TCPConn.ReadFrom unwraps the
// LimitedReader and splices on Linux, so the bytes never enter user space
// (io.CopyN does the same but allocates its LimitedReader per call).
// Between chunks, and whenever the source's read deadline passes, the
// direction counts what it copied in the connection table's entry and sets
// its next deadline.
//
// The idle timeout and max_connection_age need "no bytes either way", but
// a direction cannot see the bytes the other is splicing until its chunk
// or deadline ends. So a direction that wakes with nothing copied and finds
// the entry due to close does not close on its own view: it marks itself
// suspect and pokes the other (a read deadline in the past), which wakes,
// counts what it had copied, and closes the connection only if the entry
// is still due and the first is still suspect. Bytes counted by either
// clear both marks. A direction whose source has ended (half-closed) has
// nothing more to copy, and the other decides alone.

// chunkSize is the most one io.Copy of a direction moves before it
// returns to count the bytes.
const chunkSize = 1 << 20

// statsTick is how often a direction that is moving bytes wakes to count
// them, so the connection table's counters are at most this old.
const statsTick = time.Second

// minWait is the shortest read deadline a direction sets, so that a due
// connection that the other direction keeps alive does not spin.
const minWait = 10 * time.Millisecond

// How a proxied connection ended.
type end int32

const (
	endNone         end = iota
	endEOF              // both sides closed their writing halves
	endIdle             // timeouts.idle, or max_connection_age at an idle moment
	endClientError      // reading from or writing to the client failed
	endReplicaError     // reading from or writing to the replica failed
	endAborted          // closed from outside (drain, shutdown)
)

// pipe is one proxied connection being copied.
type pipe struct {
	c      *conn
	e      *conntable.Entry
	idle   time.Duration
	maxAge time.Duration

	fromClient, fromReplica half
	end                     atomic.Int32
}

// half is one direction of a pipe.
type half struct {
	p        *pipe
	other    *half
	src, dst net.Conn
	lr       io.LimitedReader
	buf      []byte // nil when dst reads from src itself (splice)
	in       bool   // client to replica
	errEnd   end    // how an error of this direction ends the pipe
	done     atomic.Bool
	suspect  atomic.Bool
	moving   bool // the last wait copied bytes (owned by the half's goroutine)
}

func newPipe(c *conn, up net.Conn, e *conntable.Entry, idle, maxAge time.Duration) *pipe {
	p := &pipe{c: c, e: e, idle: idle, maxAge: maxAge}
	p.fromClient = half{p: p, other: &p.fromReplica, src: c.nc, dst: up, in: true, errEnd: endClientError}
	p.fromReplica = half{p: p, other: &p.fromClient, src: up, dst: c.nc, errEnd: endReplicaError}
	for _, h := range []*half{&p.fromClient, &p.fromReplica} {
		h.lr.R = h.src
		if _, ok := h.dst.(io.ReaderFrom); !ok {
			h.buf = make([]byte, 32<<10)
		}
	}
	return p
}

// run copies both ways until both sides are done or the connection is
// closed, and says how it ended.
func (p *pipe) run() end {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.fromReplica.run()
	}()
	p.fromClient.run()
	wg.Wait()
	if e := end(p.end.Load()); e != endNone {
		return e
	}
	return endEOF
}

// finish ends the pipe for reason (the first reason sticks) and closes
// both connections.
func (p *pipe) finish(reason end) {
	p.end.CompareAndSwap(int32(endNone), int32(reason))
	p.e.Close()
}

// due reports whether the connection is to be closed at now, judging by
// the bytes counted so far: idle for timeouts.idle, or older than
// max_connection_age and idle for protocol.IdleMoment.
func (p *pipe) due(now time.Time) bool {
	idle := p.e.Idle(now)
	if idle >= p.idle {
		return true
	}
	return p.maxAge > 0 && p.e.Age(now) >= p.maxAge && idle >= protocol.IdleMoment
}

// deadline is when h's wait ends at the latest: when the connection would
// be due if no byte came, and for a direction moving bytes statsTick from
// now; never sooner than minWait from now.
func (p *pipe) deadline(h *half, now time.Time) time.Time {
	last := p.e.LastActive()
	dl := last.Add(p.idle)
	if p.maxAge > 0 {
		at := p.e.Opened.Add(p.maxAge)
		if now.Before(at) {
			at = at.Add(protocol.IdleMoment)
		} else {
			at = last.Add(protocol.IdleMoment)
		}
		if at.Before(dl) {
			dl = at
		}
	}
	if h.moving {
		if t := now.Add(statsTick); t.Before(dl) {
			dl = t
		}
	}
	if floor := now.Add(minWait); dl.Before(floor) {
		dl = floor
	}
	return dl
}

// pokeTime is a read deadline in the past: it wakes a direction at once.
var pokeTime = time.Unix(1, 0)

// run copies h's direction until its source ends or the pipe finishes.
func (h *half) run() {
	p := h.p
	now := p.c.s.now()
	for {
		if err := h.src.SetReadDeadline(p.deadline(h, now)); err != nil {
			p.finish(h.errEnd)
			return
		}
		h.lr.N = chunkSize
		n, err := io.CopyBuffer(h.dst, &h.lr, h.buf)
		now = p.c.s.now()
		h.moving = n > 0
		if n > 0 {
			if h.in {
				p.e.AddIn(n, now)
			} else {
				p.e.AddOut(n, now)
			}
			h.suspect.Store(false)
			h.other.suspect.Store(false)
		}
		switch {
		case err == nil && h.lr.N == 0:
			continue // a whole chunk: more may follow
		case err == nil:
			h.closeWrite() // the source ended: half-close the destination
			return
		case isTimeout(err):
			if end(p.end.Load()) != endNone {
				return
			}
			if n == 0 && p.due(now) {
				if h.other.done.Load() || h.other.suspect.Load() {
					p.finish(endIdle)
					return
				}
				h.suspect.Store(true)
				_ = h.other.src.SetReadDeadline(pokeTime)
			}
			continue
		default:
			if p.e.Close() {
				p.end.CompareAndSwap(int32(endNone), int32(h.errEnd))
			} else {
				p.end.CompareAndSwap(int32(endNone), int32(endAborted))
			}
			return
		}
	}
}

// closeWrite half-closes h's destination after its source ended, and
// marks h done; when the other direction is done too, the pipe ends.
func (h *half) closeWrite() {
	if cw, ok := h.dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	h.done.Store(true)
	if h.other.done.Load() {
		return
	}
	// The other direction may be waiting out a long deadline; it decides
	// alone from now on.
	_ = h.other.src.SetReadDeadline(pokeTime)
}

// isTimeout reports whether err is a passed read deadline.
func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
