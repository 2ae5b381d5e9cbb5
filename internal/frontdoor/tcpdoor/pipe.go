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

// This file copies a proxied connection's bytes both ways, adaptively as
// HAProxy's splice-auto does: small exchanges go through a buffer, bulk
// transfers are spliced.
//
// On Linux each direction starts on the read path: it waits for its
// source and reads what is there with one read(2) into a readBufSize
// buffer from a pool (rawSource.read), then writes it to the destination
// with one write(2) and puts the buffer back. The buffer is taken only once
// bytes are there and is back in the pool while the direction waits, so
// an idle connection holds none. A request or response of a few bytes
// costs a read and a write, as with HAProxy.
//
// A read that fills the whole buffer means bulk: the direction switches
// to the splice path, where it waits until its source has bytes without
// reading them (rawSource.waitReady), then copies exactly those (at most
// chunkSize) with io.Copy from an *io.LimitedReader over the raw source
// connection into the raw destination (*net.TCPConn to *net.TCPConn):
// TCPConn.ReadFrom unwraps the LimitedReader and splices, so the bytes
// never enter user space (io.CopyN does the same but allocates its
// LimitedReader per call), and since the splice asks for no more than is
// there it returns at once, handing its pipe back: an idle connection
// holds no pipe. A splice chunk smaller than readBufSize means the bulk is
// over, and the direction goes back to the read path. Off Linux (no
// rawSource), each direction copies with io.Copy as bytes come.
//
// After each copy, and whenever the source's read deadline passes, the
// direction counts what it copied in the connection table's entry. The
// deadline it waits with is re-set only when it has passed: bytes only
// ever move the right deadline later, so one set earlier fires early at
// worst, and the direction then sets the next.
//
// The idle timeout and max_connection_age need "no bytes either way", but
// a direction cannot see the bytes the other is moving until its copy
// returns. So a direction that wakes with nothing copied and finds the
// entry due to close does not close on its own view: it marks itself
// suspect and pokes the other (a read deadline in the past), which wakes,
// counts what it had copied, and closes the connection only if the entry
// is still due and the first is still suspect. Bytes counted by either
// clear both marks. A direction whose source has ended (half-closed) has
// nothing more to copy, and the other decides alone.

// readBufSize is the size of the read path's buffers; a read that fills
// one switches its direction to the splice path (HAProxy's buffers are
// 16 KiB too).
const readBufSize = 16 << 10

// readBufs holds the read path's buffers (*[]byte of readBufSize).
var readBufs = sync.Pool{New: func() any {
	b := make([]byte, readBufSize)
	return &b
}}

// chunkSize is the most one io.Copy of a direction moves before it
// returns to count the bytes (when the source has more queued, or off
// Linux, where it copies as bytes come).
const chunkSize = 1 << 20

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
	endProxyHeader      // an untrusted peer's connection began with a PROXY header
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
	// raw reads and waits on src's descriptor, when hasRaw (Linux).
	raw    rawSource
	hasRaw bool
	// splicing is true while the direction copies on the splice path.
	splicing bool
	// armed is src's read deadline as last set (zero: none yet).
	armed  time.Time
	in     bool // client to replica
	errEnd end  // how an error of this direction ends the pipe
	// guardFirst: the first bytes read must not begin with a PROXY
	// header (an untrusted peer's, while some peers are trusted).
	guardFirst bool
	done       atomic.Bool
	suspect    atomic.Bool
}

// newPipe copies between c and up. guard refuses a client whose first
// bytes are a PROXY header (see untrustedHeader).
func newPipe(c *conn, up net.Conn, e *conntable.Entry, idle, maxAge time.Duration, guard bool) *pipe {
	p := &pipe{c: c, e: e, idle: idle, maxAge: maxAge}
	p.fromClient = half{p: p, other: &p.fromReplica, src: c.nc, dst: up, in: true, errEnd: endClientError, guardFirst: guard}
	p.fromReplica = half{p: p, other: &p.fromClient, src: up, dst: c.nc, errEnd: endReplicaError}
	for _, h := range []*half{&p.fromClient, &p.fromReplica} {
		h.lr.R = h.src
		h.hasRaw = h.raw.init(h.src)
		h.splicing = !h.hasRaw
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
// be due if no byte came; never sooner than minWait from now.
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
		if !now.Before(h.armed) {
			h.armed = p.deadline(h, now)
			if err := h.src.SetReadDeadline(h.armed); err != nil {
				p.finish(h.errEnd)
				return
			}
		}
		n, ended, err := h.copyChunk()
		now = p.c.s.now()
		if n > 0 {
			if h.in {
				p.e.AddIn(n, now)
			} else {
				p.e.AddOut(n, now)
			}
			// Load first: a store on every burst would bounce the
			// marks' cache line between the two directions' cores.
			if h.suspect.Load() {
				h.suspect.Store(false)
			}
			if h.other.suspect.Load() {
				h.other.suspect.Store(false)
			}
		}
		switch {
		case err == nil && !ended:
			continue // more may follow
		case err == nil:
			h.closeWrite() // the source ended: half-close the destination
			return
		case isTimeout(err):
			h.armed = time.Time{} // passed, or poked: set the next
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
		case errors.Is(err, errUntrustedHeader):
			p.finish(endProxyHeader)
			return
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

// copyChunk copies what src has now to dst, on the read path or the
// splice path (at most chunkSize; or, without a raw source, up to
// chunkSize as it comes), and picks the path of the next chunk. ended
// means src ended.
func (h *half) copyChunk() (n int64, ended bool, err error) {
	if !h.splicing {
		bp, r, err := h.raw.read()
		if err != nil || r == 0 {
			return 0, err == nil, err
		}
		if h.guardFirst {
			h.guardFirst = false
			if untrustedHeader((*bp)[:r]) {
				readBufs.Put(bp)
				return 0, false, errUntrustedHeader
			}
		}
		w, err := h.dst.Write((*bp)[:r])
		h.splicing = r == len(*bp) // a full buffer: bulk
		readBufs.Put(bp)
		return int64(w), false, err
	}
	h.lr.N = chunkSize
	if h.hasRaw {
		avail, err := h.raw.waitReady()
		if err != nil {
			return 0, false, err
		}
		if avail > 0 {
			h.lr.N = int64(min(avail, chunkSize))
		}
	}
	n, err = io.CopyBuffer(h.dst, &h.lr, h.buf)
	if h.hasRaw && n < readBufSize {
		h.splicing = false // the bulk is over
	}
	return n, err == nil && h.lr.N > 0, err
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
