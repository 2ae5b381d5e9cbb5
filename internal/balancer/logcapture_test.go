package balancer_test

import (
	"context"
	"log/slog"
	"sync"
)

// logLine is one captured log record: level, message and attributes as
// strings.
type logLine struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// logCapture is a slog.Handler that keeps every record, for tests that
// assert what the balancer logs.
type logCapture struct {
	mu    *sync.Mutex
	lines *[]logLine
	attrs []slog.Attr
}

func newLogCapture() *logCapture { return &logCapture{mu: &sync.Mutex{}, lines: &[]logLine{}} }

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	l := logLine{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range c.attrs {
		l.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	*c.lines = append(*c.lines, l)
	c.mu.Unlock()
	return nil
}

func (c *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCapture{mu: c.mu, lines: c.lines, attrs: append(append([]slog.Attr{}, c.attrs...), as...)}
}

func (c *logCapture) WithGroup(string) slog.Handler { return c }

// matching returns the records for which keep is true.
func (c *logCapture) matching(keep func(logLine) bool) []logLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logLine
	for _, l := range *c.lines {
		if keep(l) {
			out = append(out, l)
		}
	}
	return out
}
