package replagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// logRequest is one GET of the log stream a test server saw.
type logRequest struct {
	from, auth string
}

// logServer serves the log stream's wire format (NDJSON of LogEvent), one
// script per connection: each call of lines gives the lines of the next
// connection; the connection ends after them. A line "CUT:x" is x
// without its newline.
func logServer(t *testing.T, status int, lines func(n int) []string) (*httptest.Server, chan logRequest) {
	t.Helper()
	seen := make(chan logRequest, 64)
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/groups/g/log" {
			t.Errorf("stream path %q", r.URL.Path)
		}
		seen <- logRequest{r.URL.Query().Get("from"), r.Header.Get("Authorization")}
		if status != http.StatusOK {
			http.Error(w, "not now", status)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		n++
		for _, l := range lines(n) {
			if cut, ok := strings.CutPrefix(l, "CUT:"); ok {
				fmt.Fprint(w, cut) // the connection ends inside this line
				continue
			}
			fmt.Fprintln(w, l)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, seen
}

func line(t *testing.T, ev protocol.LogEvent) string {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newSource(admins ...string) *replagent.HTTPSource {
	return &replagent.HTTPSource{Admins: admins, Group: "g", Token: func() (string, bool) { return "replica-token", true }}
}

// runSource streams from from until want events came, and returns them.
func runSource(t *testing.T, s *replagent.HTTPSource, from uint64, want int) []replagent.SourcedEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan replagent.SourcedEvent)
	errc := make(chan error, 1)
	go func() { errc <- s.Stream(ctx, from, out) }()
	var got []replagent.SourcedEvent
	for len(got) < want {
		select {
		case ev := <-out:
			got = append(got, ev)
		case err := <-errc:
			cancel()
			t.Fatalf("Stream ended after %d events: %v", len(got), err)
		}
	}
	cancel()
	if err := wait(t, errc, "Stream to end"); err != nil {
		t.Fatalf("Stream after its context ended: %v", err)
	}
	return got
}

func TestHTTPSourceResumesAfterTheLastEntryAndFailsOver(t *testing.T) {
	t.Parallel()
	down, downSeen := logServer(t, http.StatusServiceUnavailable, nil)
	up, upSeen := logServer(t, http.StatusOK, func(n int) []string {
		switch n {
		case 1:
			return []string{line(t, hello(0)), line(t, counterEntry(5, "")), line(t, counterEntry(9, "")),
				`CUT:{"type":"entry","position":"12"`}
		case 2:
			return []string{line(t, hello(0)), "", line(t, protocol.LogEvent{Type: protocol.LogEventError, Code: "closed", Message: "shutting down"})}
		case 3:
			return []string{line(t, hello(0)), line(t, protocol.LogEvent{Type: protocol.LogEventError, Code: "unavailable", Message: "etcd away"})}
		default:
			return []string{line(t, hello(0)), line(t, protocol.LogEvent{Type: protocol.LogEventHeartbeat}), line(t, counterEntry(12, ""))}
		}
	})
	got := runSource(t, newSource(down.URL, up.URL), 5, 8)
	var types []string
	for _, ev := range got {
		types = append(types, fmt.Sprintf("%s@%d", ev.Event.Type, ev.Event.Position))
		if ev.Instance != up.URL {
			t.Errorf("event from %q, want %q", ev.Instance, up.URL)
		}
	}
	if want := "hello@0 entry@5 entry@9 hello@0 hello@0 hello@0 heartbeat@0 entry@12"; strings.Join(types, " ") != want {
		t.Fatalf("events %s, want %s (a cut line and closed and unavailable errors are not passed on)", strings.Join(types, " "), want)
	}
	if r := <-downSeen; r.from != "5" {
		t.Errorf("first try from %s, want 5", r.from)
	}
	for i, want := range []string{"5", "10", "10", "10"} {
		r := <-upSeen
		if r.from != want || r.auth != "Bearer replica-token" {
			t.Errorf("connection %d to the live instance: from %s auth %q, want from %s with the replica token", i+1, r.from, r.auth, want)
		}
	}
	if got[1].Event.Request == nil || got[1].Event.Request.Target != "/increment?by=2" {
		t.Errorf("entry 5's request: %+v", got[1].Event.Request)
	}
}

func TestHTTPSourceStopsOnALineItCannotTake(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line, want string
	}{
		{"too long", `{"type":"heartbeat","message":"` + strings.Repeat("x", 200<<10) + `"}`, "--max-payload"},
		{"not json", `{"type":"entry","position":"13",`, "not a log event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := logServer(t, http.StatusOK, func(int) []string {
				return []string{line(t, hello(0)), line(t, counterEntry(12, "")), tt.line}
			})
			s := newSource(srv.URL)
			s.MaxPayload = 100 << 10
			out := make(chan replagent.SourcedEvent, 8)
			err := s.Stream(context.Background(), 1, out)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "after position 12") {
				t.Fatalf("Stream: %v, want an error saying %q after position 12", err, tt.want)
			}
			if len(out) != 2 {
				t.Fatalf("%d events passed on before the bad line, want 2", len(out))
			}
		})
	}
}

func TestHTTPSourceDropsASilentStream(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(t0)
	cut := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, line(t, hello(0)))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // silent: no heartbeat
		cut <- struct{}{}
	}))
	defer srv.Close()
	s := newSource(srv.URL)
	s.Clock, s.IdleTimeout = clk, 4*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan replagent.SourcedEvent, 4)
	errc := make(chan error, 1)
	go func() { errc <- s.Stream(ctx, 1, out) }()
	if ev := wait(t, out, "the hello"); ev.Event.Type != protocol.LogEventHello {
		t.Fatalf("first event %+v", ev.Event)
	}
	defer cancel()
	clk.Advance(4 * time.Second) // one tick, 4s after the last line
	wait(t, cut, "the silent stream to be dropped")
	cancel()
	if err := wait(t, errc, "Stream to end"); err != nil {
		t.Fatal(err)
	}
}
