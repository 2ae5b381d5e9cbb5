package api

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// allEvents streams the events of every group as Server-Sent Events, each
// with the SSE id "<instance>-<seq>": this instance's name and the event's
// place in its balancer-wide sequence. A client that reconnects with
// Last-Event-ID (the header, or ?last_event_id= for clients that cannot
// set it) gets exactly the events after that id while the balancer still
// keeps them (the last balancer.EventReplay); otherwise (no id, an id too
// old, ahead, another instance's, or not an id) it first gets a "status"
// event whose data is {"groups": [every group's status]} and whose id is
// the latest event's, then the live events. A reader too slow to keep up never
// slows the balancer: once it falls behind the kept events it gets a fresh
// "status" and goes on from there, so it never misses a change silently.
// Idle streams get a comment line every heartbeat; the stream ends with a
// "closed" event when the balancer shuts down.
func (s *server) allEvents(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, "")
}

// stream writes the events of group (all groups if "") from the
// balancer's event log, as allEvents describes.
func (s *server) stream(w http.ResponseWriter, r *http.Request, group string) {
	after, resume := s.b.ParseEventID(lastEventID(r))
	rc := http.NewResponseController(w)
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.log.Debug("event stream: cannot clear the write deadline", "err", err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	out := &sseWriter{w: bufio.NewWriter(w), rc: rc}
	beat := time.NewTicker(s.opts.Heartbeat)
	defer beat.Stop()
	for {
		evs, last, ok, next := s.b.EventsSince(after)
		if !ok || !resume {
			// The status is read after the sequence: it reflects at
			// least every event up to last.
			st, err := s.status(group)
			if err != nil {
				out.closed(group, "the group was deleted")
				return
			}
			out.event(balancer.Event{ID: s.b.EventID(last), Seq: last, Type: "status", Group: group, Time: time.Now(), Data: st})
			resume, evs = true, nil
		}
		for _, ev := range evs {
			switch {
			case group == "":
				out.event(ev)
			case ev.Group != group, ev.Type == "group-created":
			case ev.Type == "group-deleted":
				out.closed(group, "the group was deleted")
				return
			default:
				out.event(ev)
			}
		}
		after = last
		if out.flush() != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.b.Done():
			out.closed("", "the balancer is shutting down")
			return
		case <-next:
		case <-beat.C:
			fmt.Fprintf(out.w, ": heartbeat %s\n\n", time.Now().UTC().Format(time.RFC3339))
		}
	}
}

// status is the data of a "status" event: the group's status, or
// {"groups": [every group's status]} for all groups.
func (s *server) status(group string) (any, error) {
	if group == "" {
		return map[string]any{"groups": s.b.Groups()}, nil
	}
	return s.b.Group(group)
}

// lastEventID is the id a reconnecting client last saw ("" none).
func lastEventID(r *http.Request) string {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("last_event_id")
	}
	return strings.TrimSpace(v)
}
