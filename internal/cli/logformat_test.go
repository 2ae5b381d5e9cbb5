package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// Loggers derived before a log_format change write in the new format
// after it, with their attributes and groups.
func TestLogHandlerSwitchesFormat(t *testing.T) {
	var buf bytes.Buffer
	level := new(slog.LevelVar)
	h := newLogHandler(&buf, level, "text")
	log := slog.New(h)
	child := log.With("group", "web").WithGroup("call").With("n", 1)

	child.Info("before", "k", "v")
	if got := buf.String(); !strings.Contains(got, `msg=before group=web call.n=1 call.k=v`) {
		t.Fatalf("text line %q", got)
	}
	buf.Reset()

	h.setFormat(config.LogFormatJSON)
	child.Info("after", "k", "v")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("after the switch the line is not JSON: %q: %v", buf.String(), err)
	}
	call, _ := line["call"].(map[string]any)
	if line["msg"] != "after" || line["group"] != "web" || call["n"] != float64(1) || call["k"] != "v" {
		t.Errorf("JSON line %v lost the logger's attributes or groups", line)
	}
	buf.Reset()

	level.Set(slog.LevelWarn)
	child.Info("dropped")
	if buf.Len() != 0 {
		t.Errorf("an info line passed log_level warn: %q", buf.String())
	}
	h.setFormat("text")
	log.Warn("back")
	if got := buf.String(); !strings.HasPrefix(got, "time=") || !strings.Contains(got, "msg=back") {
		t.Errorf("after switching back: %q", got)
	}
}
