package replagent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// checkpointRequest asks the apply loop for the server's state between two
// entries.
type checkpointRequest struct {
	ctx   context.Context
	reply chan checkpointReply // buffered, 1
}

type checkpointReply struct {
	state []byte
	pos   uint64
	err   error
}

// serveCheckpoint takes the server's state for cr. Called by Run's
// goroutine between two entries.
func (a *Agent) serveCheckpoint(cr checkpointRequest, core *Core) {
	state, err := a.opts.Deliverer.State(cr.ctx)
	cr.reply <- checkpointReply{state: state, pos: core.Applied(), err: err}
}

// Handler serves the agent's listener: GET protocol.CheckpointPath (the
// server's state taken between two entries, with Fulcrum-Position naming
// the last entry applied before it; 501 when the server cannot transfer
// state, 503 while the agent is joining or stopped), GET
// protocol.ReplicationHealthzPath (ServeHealth), the server's outgoing
// calls made through the agent as through an HTTP proxy (IsOutcall;
// outcall.go), and everything else through next (the proxy to the server:
// NewProxy).
func (a *Agent) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsOutcall(r) {
			a.serveOutcall(w, r)
			return
		}
		if r.URL.Path == protocol.ReplicationHealthzPath {
			ServeHealth(w, r, a)
			return
		}
		if r.URL.Path != protocol.CheckpointPath {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+": "+protocol.CheckpointPath+" allows GET only")
			return
		}
		a.checkpoint(w, r)
	})
}

func (a *Agent) checkpoint(w http.ResponseWriter, r *http.Request) {
	if !a.joined.Load() {
		writeError(w, http.StatusServiceUnavailable, "joining", "this replica is joining its group: take the checkpoint from another")
		return
	}
	cr := checkpointRequest{ctx: r.Context(), reply: make(chan checkpointReply, 1)}
	select {
	case a.checkpoints <- cr:
	case <-a.done:
		writeError(w, http.StatusServiceUnavailable, "stopped", "this replica's agent has stopped")
		return
	case <-r.Context().Done():
		return
	}
	rep := <-cr.reply
	switch {
	case errors.Is(rep.err, ErrNoState):
		writeError(w, http.StatusNotImplemented, "no_state", rep.err.Error())
	case rep.err != nil:
		writeError(w, http.StatusBadGateway, "state_failed", rep.err.Error())
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set(protocol.HeaderPosition, strconv.FormatUint(rep.pos, 10))
		w.Header().Set("Content-Length", strconv.Itoa(len(rep.state)))
		_, _ = w.Write(rep.state)
	}
}

// writeError answers with fulcrum's error shape.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(errorBody(code, msg), '\n'))
}

// errorBody is fulcrum's error shape, {"error":{"code":…,"message":…}}.
func errorBody(code, msg string) []byte {
	b, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": msg}})
	return b
}

// NewProxy returns a reverse proxy to the server at target (an absolute
// http(s) base URL): the read-only calls a bridge sends to this replica.
func NewProxy(target string) (http.Handler, error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("replagent: target " + strconv.Quote(target) + ": must be an absolute http:// or https:// URL")
	}
	return &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.SetXForwarded()
	}}, nil
}
