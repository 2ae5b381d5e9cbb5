package bridge

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// serveOrdered orders one request through the hub and answers with the
// first reply.
func (s *Server) serveOrdered(w http.ResponseWriter, r *http.Request, snap *frontdoor.Snapshot, lw *httpdoor.LogWriter) {
	id, err := identify(r.Header, connSessionOf(r.Context()), true)
	if err != nil {
		writeError(w, r, snap, err)
		return
	}
	to := frontdoor.TimeoutsOf(snap.Timeouts)
	ctx, cancel := context.WithTimeout(r.Context(), to.Request)
	defer cancel()

	body, err := readBody(w, r, maxPayload(snap))
	if err != nil {
		if r.Context().Err() != nil {
			lw.SetStatus(statusClientClosed)
			return
		}
		writeError(w, r, snap, err)
		return
	}
	req := &protocol.OrderedRequest{
		Kind:   protocol.KindHTTP,
		Method: r.Method,
		Target: r.URL.RequestURI(),
		Header: orderedHeader(r.Header),
		Body:   body,
		Time:   s.now().UTC(),
		Seed:   s.seed(),
	}
	rep, err := s.hub.Order(ctx, replhub.Call{Session: id.Session, Seq: id.Seq, Request: req})
	if err != nil {
		if r.Context().Err() != nil {
			// The client went away: nobody to answer. (The request may
			// have been ordered: its reply is the replicas' to keep.)
			lw.SetStatus(statusClientClosed)
			return
		}
		var expired *replhub.ReplyExpiredError
		if !errors.As(err, &expired) && !errors.Is(err, context.DeadlineExceeded) && !isRefusal(err) {
			s.log.Warn("ordering a request failed", "session", id.Session, "seq", id.Seq, "method", r.Method, "path", r.URL.Path, "err", err)
		}
		writeError(w, r, snap, err)
		return
	}
	lw.SetReplica(rep.Replica)
	// MEAD's fault injection, fulcrum's sixth point: the bridge dies
	// between appending the request and answering it (docs/testing.md).
	// gofail: var bridgeBeforeAnswer struct{}
	// failpoint.Kill()
	writeReply(w, r, rep)
}

// isRefusal tells the errors that say the request was refused for what it
// is or for the group's state, not a failure of the bridge or the log.
func isRefusal(err error) bool {
	return errors.Is(err, replog.ErrPayloadTooLarge) || errors.Is(err, replog.ErrLogFull) ||
		errors.Is(err, replog.ErrBadSession) || errors.Is(err, replhub.ErrNoReplicas)
}

// maxPayload is the group's max_payload (replog's default when unset).
func maxPayload(snap *frontdoor.Snapshot) int64 {
	if n := snap.Replicated.MaxPayload.Int64(); n > 0 {
		return n
	}
	return replog.DefaultMaxPayload
}

// readBody reads r's body whole, refusing one above max bytes: at once by
// its Content-Length, or as soon as reading passes max. A body at most
// max long may still be refused by the log (its entry adds the request's
// head and encoding).
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength > max {
		return nil, &BodyTooLargeError{Size: r.ContentLength, Max: max}
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &BodyTooLargeError{Size: -1, Max: max}
		}
		return nil, &bodyReadError{err: err}
	}
	if len(b) == 0 {
		return nil, nil
	}
	return b, nil
}

// hopByHop are the header fields that concern one connection only (RFC
// 9110 §7.6.1), in canonical form: never ordered, never answered.
var hopByHop = map[string]bool{
	"Connection":          true,
	"Proxy-Connection":    true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
}

// bridgeOwned are request fields the bridge reads or stamps itself: the
// session headers identify the request in the log (each replica gets the
// same entry, whatever session it came from) and the stamps are the
// entry's Time and Seed. Idempotency-Key is kept: servers may use it.
var bridgeOwned = map[string]bool{
	protocol.HeaderSession:  true,
	protocol.HeaderSequence: true,
	protocol.HeaderTime:     true,
	protocol.HeaderSeed:     true,
	protocol.HeaderPosition: true,
	"Content-Length":        true,
}

// orderedHeader is the header an ordered request carries: the client's,
// less the hop-by-hop fields (and those Connection names) and the
// bridge's own. nil when nothing is left.
func orderedHeader(h http.Header) http.Header {
	var out http.Header
	conn := connectionTokens(h)
	for k, vs := range h {
		if hopByHop[k] || bridgeOwned[k] || conn[k] {
			continue
		}
		if out == nil {
			out = make(http.Header, len(h))
		}
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// connectionTokens are the fields the Connection header names, in
// canonical form.
func connectionTokens(h http.Header) map[string]bool {
	var m map[string]bool
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				if m == nil {
					m = map[string]bool{}
				}
				m[textproto.CanonicalMIMEHeaderKey(f)] = true
			}
		}
	}
	return m
}

// writeReply answers with a replica's reply: its status, its header less
// the hop-by-hop fields, its body, the entry's position in
// Fulcrum-Position, and how long ordering took in Server-Timing
// (serverTiming).
func writeReply(w http.ResponseWriter, r *http.Request, rep replhub.Reply) {
	h := w.Header()
	conn := connectionTokens(rep.Header)
	for k, vs := range rep.Header {
		if hopByHop[k] || conn[k] || k == "Content-Length" || k == protocol.HeaderPosition {
			continue
		}
		h[k] = vs
	}
	h.Set(protocol.HeaderPosition, strconv.FormatUint(rep.Position, 10))
	h.Add("Server-Timing", serverTiming(rep))
	status := rep.Status
	if status < 200 || status > 999 {
		// A reply without a final status (a 1xx, or none) cannot be
		// given as an answer.
		writeError(w, r, nil, &proxyError{err: errors.New("the replica's reply has status " + strconv.Itoa(status))})
		return
	}
	bodyAllowed := status != http.StatusNoContent && status != http.StatusNotModified
	switch {
	case r.Method == http.MethodHead:
		// The replica's Content-Length says what a GET would get.
		if cl := rep.Header.Get("Content-Length"); cl != "" {
			h.Set("Content-Length", cl)
		}
	case bodyAllowed:
		h.Set("Content-Length", strconv.Itoa(len(rep.Body)))
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead && bodyAllowed && len(rep.Body) > 0 {
		_, _ = w.Write(rep.Body)
	}
}

// serverTiming is the Server-Timing entry of an ordered call, in
// milliseconds: "append;dur=0.412, wait;dur=1.030" — append is the log's
// append, wait the wait for the first reply after it (fulcrum bench
// replication splits its RTT with them). A replica's own Server-Timing
// entries are kept beside it.
func serverTiming(rep replhub.Reply) string {
	b := make([]byte, 0, 40)
	b = append(b, "append;dur="...)
	b = strconv.AppendFloat(b, float64(rep.Append)/float64(time.Millisecond), 'f', 3, 64)
	b = append(b, ", wait;dur="...)
	b = strconv.AppendFloat(b, float64(rep.Wait)/float64(time.Millisecond), 'f', 3, 64)
	return string(b)
}
