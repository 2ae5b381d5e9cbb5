package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// events streams a group's events as Server-Sent Events: first a "status"
// event with the group's whole status, then one event per balancer event
// ("step", "binding", "membership", "config"), each "event: <type>" and
// "data: <Event JSON>". Idle streams get a comment line every heartbeat.
// The stream ends with a "closed" event when the group is deleted or the
// balancer shuts down, and silently when the client goes away.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ch, cancel, err := s.b.Subscribe(name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer cancel()
	st, err := s.b.Group(name)
	if err != nil {
		s.fail(w, r, err)
		return
	}

	rc := http.NewResponseController(w)
	// The server's write timeout, if any, must not cut a stream that is
	// meant to last; heartbeats detect dead clients instead.
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.log.Debug("event stream: cannot clear the write deadline", "err", err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	out := &sseWriter{w: bufio.NewWriter(w), rc: rc}
	out.event(balancer.Event{Type: "status", Group: name, Time: time.Now(), Data: st})
	if out.flush() != nil {
		return
	}
	beat := time.NewTicker(s.opts.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-ch:
			// Send this event and whatever else is queued in one write.
			for ok {
				out.event(ev)
				select {
				case ev, ok = <-ch:
					continue
				default:
				}
				break
			}
			if !ok {
				out.closed(name, "the group was deleted or the balancer is shutting down")
				return
			}
			if out.flush() != nil {
				return
			}
		case <-beat.C:
			// A group deleted while its front door was not running never
			// closes the channel: check on every beat.
			if _, err := s.b.Group(name); err != nil {
				out.closed(name, "the group was deleted")
				return
			}
			fmt.Fprintf(out.w, ": heartbeat %s\n\n", time.Now().UTC().Format(time.RFC3339))
			if out.flush() != nil {
				return
			}
		}
	}
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
	if ev.ID != 0 {
		fmt.Fprintf(s.w, "id: %d\n", ev.ID)
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
