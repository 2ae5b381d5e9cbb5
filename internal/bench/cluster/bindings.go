package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// bindingEvent is one "binding" event of a group's event stream (GET
// /v1/groups/{name}/events): a planned move completed.
type bindingEvent struct {
	Time    time.Time
	Client  string
	Replica string
	// LookedUp: the front door bound the client by a move it looked up
	// in etcd; Elsewhere: (at the leader) another instance's bound
	// notice. Neither: a move in the instance's own snapshot.
	LookedUp, Elsewhere bool
}

// bindingTally collects one instance's binding events for a group until
// its context ends.
type bindingTally struct {
	done chan struct{}

	mu     sync.Mutex
	events []bindingEvent
}

// wait returns the events once the stream's reader has stopped.
func (t *bindingTally) wait() []bindingEvent {
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.events
}

// count is how many events so far match.
func (t *bindingTally) count(match func(bindingEvent) bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, ev := range t.events {
		if match(ev) {
			n++
		}
	}
	return n
}

// watchBindings opens in's event stream of group and collects its
// binding events in the background until ctx ends; the stream is open
// when it returns.
func watchBindings(ctx context.Context, in *instance, group string) (*bindingTally, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.admin+"/v1/groups/"+group+"/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := streamClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cluster: events of %s at %s: %w", group, in.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("cluster: events of %s at %s: status %d", group, in.name, resp.StatusCode)
	}
	t := &bindingTally{done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if ev, ok := parseBinding(sc.Text()); ok {
				t.mu.Lock()
				t.events = append(t.events, ev)
				t.mu.Unlock()
			}
		}
	}()
	return t, nil
}

// streamClient reads event streams: no timeout, the stream's context
// ends it.
var streamClient = &http.Client{}

// parseBinding parses one line of an event stream: a "data:" line whose
// event is of type binding and happened at the instance whose stream it
// is (one relayed from another instance, with "instance" set, is counted
// at that instance).
func parseBinding(line string) (bindingEvent, bool) {
	data, ok := strings.CutPrefix(line, "data:")
	if !ok {
		return bindingEvent{}, false
	}
	var ev struct {
		Type     string    `json:"type"`
		Instance string    `json:"instance"`
		Time     time.Time `json:"time"`
		Data     struct {
			Client    string `json:"client"`
			Replica   string `json:"replica"`
			LookedUp  bool   `json:"looked_up"`
			Elsewhere bool   `json:"elsewhere"`
		} `json:"data"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(data)), &ev) != nil || ev.Type != "binding" || ev.Instance != "" {
		return bindingEvent{}, false
	}
	return bindingEvent{Time: ev.Time, Client: ev.Data.Client, Replica: ev.Data.Replica, LookedUp: ev.Data.LookedUp, Elsewhere: ev.Data.Elsewhere}, true
}

// sumLabelled adds up the samples of metric name, in Prometheus's text
// format, whose labels include label (`kind="bound"`), and says whether
// any was found.
func sumLabelled(text, name, label string) (float64, bool, error) {
	var sum float64
	found := false
	for i, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), name+"{")
		if !ok {
			continue
		}
		end := strings.LastIndex(rest, "}")
		if end < 0 {
			return 0, false, fmt.Errorf("cluster: metrics line %d: unterminated labels: %q", i+1, line)
		}
		if !strings.Contains(","+rest[:end]+",", ","+label+",") {
			continue
		}
		fields := strings.Fields(rest[end+1:])
		if len(fields) == 0 {
			return 0, false, fmt.Errorf("cluster: metrics line %d: no value: %q", i+1, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, false, fmt.Errorf("cluster: metrics line %d: value %q: %w", i+1, fields[0], err)
		}
		sum += v
		found = true
	}
	return sum, found, nil
}
