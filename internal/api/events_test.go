package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
)

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	id, event string
	data      []byte
	comment   string
}

// openStream opens a group's event stream and parses its events onto a
// channel, closed when the stream ends.
func (e *env) openStream(ctx context.Context, path string, hdr http.Header) (<-chan sseEvent, *http.Response) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	ch := make(chan sseEvent, 256)
	if resp.StatusCode != http.StatusOK {
		close(ch)
		return ch, resp
	}
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.event != "" || ev.comment != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				ev.comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = append(ev.data, line[6:]...)
			}
		}
	}()
	return ch, resp
}

// awaitEvent returns the next event of type typ, failing when ctx ends or
// the stream closes first.
func awaitEvent(ctx context.Context, t *testing.T, ch <-chan sseEvent, typ string) sseEvent {
	t.Helper()
	for {
		select {
		case <-ctx.Done():
			t.Fatalf("no %q event before the deadline", typ)
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended before a %q event", typ)
			}
			if ev.event == typ || (typ == "heartbeat" && strings.HasPrefix(ev.comment, "heartbeat")) {
				return ev
			}
		}
	}
}

func TestEventStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken, Heartbeat: 10 * time.Millisecond}, balancer.Options{})
	e.mustGroup("g", nil)
	r := e.mustRegister("g", "http://127.0.0.1:9001")
	ctx := boundedContext(t)

	events, resp := e.openStream(ctx, "/v1/groups/g/events", http.Header{"Authorization": {"Bearer " + adminToken}})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	status := awaitEvent(ctx, t, events, "status")
	var first balancer.Event
	if err := json.Unmarshal(status.data, &first); err != nil || first.Type != "status" || first.Group != "g" {
		t.Fatalf("status event %s: %v", status.data, err)
	}

	want(t, e.call("POST", "/v1/report", r.Token, `{"load":7}`), http.StatusOK)
	step := awaitEvent(ctx, t, events, "step")
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Replicas []struct {
				ID       string   `json:"id"`
				Load     *float64 `json:"load"`
				Advisory string   `json:"advisory"`
			} `json:"replicas"`
		} `json:"data"`
	}
	if err := json.Unmarshal(step.data, &ev); err != nil || ev.Type != "step" || step.id == "" {
		t.Fatalf("step event %q %s: %v", step.id, step.data, err)
	}
	awaitEvent(ctx, t, events, "heartbeat")

	// Draining the replica is a membership event.
	want(t, e.call("POST", "/v1/groups/g/replicas/"+r.ID+"/drain", adminToken, nil), http.StatusOK)
	awaitEvent(ctx, t, events, "membership")

	// Deleting the group ends the stream with "closed".
	want(t, e.call("DELETE", "/v1/groups/g", adminToken, nil), http.StatusNoContent)
	awaitEvent(ctx, t, events, "closed")
	for range events {
	}
}

func TestEventStreamQueryToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{AdminToken: adminToken}, balancer.Options{})
	e.mustGroup("g", nil)
	ctx := boundedContext(t)

	_, resp := e.openStream(ctx, "/v1/groups/g/events", nil)
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	resp.Body.Close()
	_, resp = e.openStream(ctx, "/v1/groups/g/events?token=wrong", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", resp.StatusCode)
	}
	resp.Body.Close()
	_, resp = e.openStream(ctx, "/v1/groups/nope/events?token="+adminToken, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown group: %d", resp.StatusCode)
	}
	resp.Body.Close()

	sctx, cancel := context.WithCancel(ctx)
	events, resp := e.openStream(sctx, "/v1/groups/g/events?token="+adminToken, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("query token: %d", resp.StatusCode)
	}
	awaitEvent(ctx, t, events, "step")
	// The client going away ends the stream.
	cancel()
	for range events {
	}
}
