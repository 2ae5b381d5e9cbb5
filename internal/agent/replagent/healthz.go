package replagent

import (
	"encoding/json"
	"net/http"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Agent states, as GET protocol.ReplicationHealthzPath names them.
const (
	// StateStarting: the agent is not running yet (no registration, or
	// Run has not started).
	StateStarting = "starting"
	// StateJoining: Run waits for its first hello, or takes a checkpoint.
	StateJoining = "joining"
	// StateApplying: the agent applies the log (or waits for entries).
	StateApplying = "applying"
	// StateStopped: Run has returned; the replica leaves its group.
	StateStopped = "stopped"
)

// Health is the body of GET protocol.ReplicationHealthzPath.
type Health struct {
	// State is one of StateStarting, StateJoining, StateApplying,
	// StateStopped; only StateApplying answers 200.
	State string `json:"state"`
	// Applied is the last position applied and stored.
	Applied uint64 `json:"applied"`
}

// State is the agent's state: StateJoining until Run took its first hello
// (and any state transfer it led to), StateApplying then, StateStopped once
// Run has returned.
func (a *Agent) State() string {
	select {
	case <-a.done:
		return StateStopped
	default:
	}
	if !a.joined.Load() {
		return StateJoining
	}
	return StateApplying
}

// ServeHealth answers GET protocol.ReplicationHealthzPath for a (nil: an
// agent that is not running yet, StateStarting): 200 while it applies,
// 503 otherwise, with a Health body either way.
func ServeHealth(w http.ResponseWriter, r *http.Request, a *Agent) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+": "+protocol.ReplicationHealthzPath+" allows GET and HEAD only")
		return
	}
	h := Health{State: StateStarting}
	if a != nil {
		h = Health{State: a.State(), Applied: a.Applied()}
	}
	status := http.StatusOK
	if h.State != StateApplying {
		status = http.StatusServiceUnavailable
	}
	b, _ := json.Marshal(h)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = w.Write(append(b, '\n'))
	}
}
