package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// events streams a group's events as Server-Sent Events: first a "status"
// event with the group's whole status, then one event per balancer event
// ("step", "binding", "membership", "config", "alert", "divergence",
// "leader"), each
// "id: <instance>-<seq>" from the balancer-wide sequence, "event: <type>" and
// "data: <Event JSON>". Last-Event-ID resumes as on GET /v1/events
// (allEvents), the status standing for the whole picture whenever events
// cannot be replayed. Idle streams get a comment line every heartbeat.
// The stream ends with a "closed" event when the group is deleted or the
// balancer shuts down, and silently when the client goes away.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, err := s.b.Group(name); err != nil {
		s.fail(w, r, err)
		return
	}
	s.stream(w, r, name)
}

// sseWriter writes Server-Sent Events.
type sseWriter struct {
	w  *bufio.Writer
	rc *http.ResponseController
}

// event writes one event; its data is the Event as one line of JSON, its
// SSE id the event's place in the balancer-wide sequence (none for an
// event outside it, such as "closed", so that the client's last id stays).
func (s *sseWriter) event(ev balancer.Event) {
	data, err := json.Marshal(ev)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"type": ev.Type, "error": err.Error()})
	}
	if ev.ID != "" {
		fmt.Fprintf(s.w, "id: %s\n", ev.ID)
	}
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", ev.Type, data)
}

// closed writes the final "closed" event and flushes.
func (s *sseWriter) closed(group, reason string) {
	s.event(balancer.Event{Type: "closed", Group: group, Time: time.Now(), Data: map[string]string{"reason": reason}})
	_ = s.flush()
}

// flush sends what was written to the client.
func (s *sseWriter) flush() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	return s.rc.Flush()
}
