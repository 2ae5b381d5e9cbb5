package cluster

import (
	"testing"
	"time"
)

// parseBinding keeps the binding events of a stream, with their flags,
// and nothing else.
func TestParseBinding(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		line string
		want bindingEvent
		ok   bool
	}{
		{"own move", `data: {"type":"binding","group":"g","time":"2026-11-27T09:00:00Z","data":{"client":"c1","replica":"r1","planned":true}}`,
			bindingEvent{Time: at, Client: "c1", Replica: "r1"}, true},
		{"looked up", `data: {"type":"binding","group":"g","time":"2026-11-27T09:00:00Z","data":{"client":"c2","replica":"r2","planned":true,"looked_up":true}}`,
			bindingEvent{Time: at, Client: "c2", Replica: "r2", LookedUp: true}, true},
		{"notice at the leader", `data:{"type":"binding","group":"g","time":"2026-11-27T09:00:00Z","data":{"client":"c3","replica":"r3","planned":true,"elsewhere":true}}`,
			bindingEvent{Time: at, Client: "c3", Replica: "r3", Elsewhere: true}, true},
		{"relayed from another instance", `data: {"type":"binding","group":"g","instance":"fulcrum-b","time":"2026-11-27T09:00:00Z","data":{"client":"c4","replica":"r3","planned":true,"elsewhere":true}}`,
			bindingEvent{}, false},
		{"step", `data: {"type":"step","group":"g","time":"2026-11-27T09:00:00Z","data":{"replicas":[]}}`, bindingEvent{}, false},
		{"event line", `event: binding`, bindingEvent{}, false},
		{"heartbeat", `: heartbeat 2026-11-27T09:00:15Z`, bindingEvent{}, false},
		{"not JSON", `data: {"type":"binding"`, bindingEvent{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseBinding(tc.line)
			if ok != tc.ok || got != tc.want {
				t.Errorf("parseBinding(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// sumLabelled adds the samples with the label and only those.
func TestSumLabelled(t *testing.T) {
	t.Parallel()
	text := `# HELP fulcrum_cluster_push_failures_total calls to another instance's admin API that failed
# TYPE fulcrum_cluster_push_failures_total counter
fulcrum_cluster_push_failures_total{kind="bound"} 3
fulcrum_cluster_push_failures_total{kind="loads"} 7
fulcrum_cluster_push_failures_total_other{kind="bound"} 100
`
	got, found, err := sumLabelled(text, "fulcrum_cluster_push_failures_total", `kind="bound"`)
	if err != nil || !found || got != 3 {
		t.Errorf("sumLabelled = %v, %v, %v; want 3, true, nil", got, found, err)
	}
	if got, found, err := sumLabelled(text, "fulcrum_no_such_metric", `kind="bound"`); err != nil || found || got != 0 {
		t.Errorf("sumLabelled of an absent metric = %v, %v, %v; want 0, false, nil", got, found, err)
	}
	if _, _, err := sumLabelled(`fulcrum_cluster_push_failures_total{kind="bound"} x`, "fulcrum_cluster_push_failures_total", `kind="bound"`); err == nil {
		t.Error("sumLabelled of a bad value: no error")
	}
}
