package balancer_test

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// records returns the logged records whose msg contains msg.
func (l *logBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m, _ := r["msg"].(string); strings.Contains(m, msg) {
			out = append(out, r)
		}
	}
	return out
}

func newLog() (*logBuffer, *slog.Logger) {
	l := &logBuffer{}
	return l, slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// fieldsOf returns the "fields" attribute of a record.
func fieldsOf(r map[string]any) []string {
	var out []string
	fs, _ := r["fields"].([]any)
	for _, f := range fs {
		s, _ := f.(string)
		out = append(out, s)
	}
	return out
}

const differs = "differs from the stored one"

// With SharedConfig, the config file's groups are created when absent and
// never overwritten or deleted, at start or at a reload; a difference is
// a warning naming the fields; changes through the API carry no warning
// of a revert.
func TestSharedConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{shared: true, config: []protocol.Group{configGroup()}})
	if st := e.mustGroup("cfg"); st.Source != protocol.SourceConfig || st.Strategy != strategy.LeastLoadedName {
		t.Fatalf("declared group at the first start: source %q strategy %q; want config, %s", st.Source, st.Strategy, strategy.LeastLoadedName)
	}

	rr := strategy.RoundRobinName
	put, err := e.b.PatchGroup("cfg", protocol.GroupPatch{Strategy: &rr})
	if err != nil {
		t.Fatal(err)
	}
	if put.Warning != "" {
		t.Errorf("a change through the API to a declared group warns %q; with a shared store nothing reverts it", put.Warning)
	}

	// A restart with the same file: the stored group is kept, the
	// difference is logged naming the field.
	logs, log := newLog()
	e2 := e.reopen(envOptions{shared: true, config: []protocol.Group{configGroup()}, logger: log})
	if got := e2.mustGroup("cfg").Strategy; got != rr {
		t.Errorf("strategy after a restart with the file: %s, want the stored %s", got, rr)
	}
	w := logs.records(t, differs)
	if len(w) != 1 || w[0]["level"] != "WARN" || w[0]["group"] != "cfg" || !slices.Contains(fieldsOf(w[0]), "strategy") {
		t.Fatalf("warnings of a difference at start: %v; want one naming group cfg and field strategy", w)
	}

	// A reload that no longer declares cfg and declares a new group:
	// cfg stays, the new one is created and its front door serves.
	fresh := protocol.Group{Name: "fresh", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName}
	res, err := e2.b.Reload([]protocol.Group{fresh})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Added, []string{"fresh"}) || len(res.Changed) != 0 || len(res.Removed) != 0 {
		t.Errorf("reload result %+v, want only fresh added", res)
	}
	if _, err := e2.b.Group("cfg"); err != nil {
		t.Errorf("a group the file no longer declares was deleted at a reload: %v", err)
	}
	st := e2.mustGroup("fresh")
	if st.Source != protocol.SourceConfig || strings.HasSuffix(st.Advertise, ":0") || st.Advertise == "" {
		t.Errorf("group created by a reload: source %q advertise %q; want config and a bound front door", st.Source, st.Advertise)
	}

	// A reload that changes it: not applied, a warning.
	changed := fresh
	changed.Strategy = strategy.RandomName
	if res, err := e2.b.Reload([]protocol.Group{changed}); err != nil || len(res.Added)+len(res.Changed)+len(res.Removed) != 0 {
		t.Errorf("reload of a changed declaration: %+v, %v; want nothing applied", res, err)
	}
	if got := e2.mustGroup("fresh").Strategy; got != strategy.RoundRobinName {
		t.Errorf("strategy after a reload changing the file: %s, want the stored %s", got, strategy.RoundRobinName)
	}
	if w := logs.records(t, differs); len(w) != 2 || w[1]["group"] != "fresh" || !slices.Contains(fieldsOf(w[1]), "strategy") {
		t.Errorf("warnings after the reload: %v; want a second one naming fresh and strategy", w)
	}

	// A file that cannot be used changes nothing.
	bad := protocol.Group{Name: "bad", FrontDoor: "127.0.0.1:0", Binding: "sometimes"}
	if _, err := e2.b.Reload([]protocol.Group{bad, {Name: "other", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest}}); err == nil {
		t.Error("reload of an invalid group succeeded")
	}
	if _, err := e2.b.Group("other"); err == nil {
		t.Error("a refused reload created a group")
	}
}
