package cli

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// logHandler is the balancer's log handler: slog's TextHandler or
// JSONHandler over one writer and one level, switched by a reload that
// changes log_format (setFormat). Loggers derived with With or WithGroup
// before a switch follow it. Safe for concurrent use.
type logHandler struct {
	root *logRoot
	// ops are this handler's WithAttrs and WithGroup calls, in order,
	// replayed on the root's handler of the generation in force.
	ops  []logOp
	memo atomic.Pointer[logGen]
}

// logRoot is what every handler derived from one logHandler shares.
type logRoot struct {
	w     io.Writer
	level slog.Leveler
	cur   atomic.Pointer[logGen]
}

// logGen is a handler of one generation of the root: a new format is a new
// generation.
type logGen struct {
	h   slog.Handler
	gen uint64
}

// logOp is one WithAttrs (attrs) or WithGroup (group) call.
type logOp struct {
	attrs []slog.Attr
	group string
}

func newLogHandler(w io.Writer, level slog.Leveler, format string) *logHandler {
	r := &logRoot{w: w, level: level}
	r.cur.Store(&logGen{h: r.base(format)})
	return &logHandler{root: r}
}

func (r *logRoot) base(format string) slog.Handler {
	opts := &slog.HandlerOptions{Level: r.level}
	if format == config.LogFormatJSON {
		return slog.NewJSONHandler(r.w, opts)
	}
	return slog.NewTextHandler(r.w, opts)
}

// setFormat makes every handler derived from h's root write in format
// (config.LogFormatJSON, or text) from now on.
func (h *logHandler) setFormat(format string) {
	old := h.root.cur.Load()
	h.root.cur.Store(&logGen{h: h.root.base(format), gen: old.gen + 1})
}

// handler is the root's handler in force with h's ops applied, memoised
// per generation.
func (h *logHandler) handler() slog.Handler {
	cur := h.root.cur.Load()
	if len(h.ops) == 0 {
		return cur.h
	}
	if m := h.memo.Load(); m != nil && m.gen == cur.gen {
		return m.h
	}
	out := cur.h
	for _, op := range h.ops {
		if op.group != "" {
			out = out.WithGroup(op.group)
		} else {
			out = out.WithAttrs(op.attrs)
		}
	}
	h.memo.Store(&logGen{h: out, gen: cur.gen})
	return out
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.handler().Enabled(ctx, l)
}

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.handler().Handle(ctx, r)
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(logOp{attrs: attrs})
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(logOp{group: name})
}

func (h *logHandler) with(op logOp) *logHandler {
	ops := make([]logOp, len(h.ops), len(h.ops)+1)
	copy(ops, h.ops)
	return &logHandler{root: h.root, ops: append(ops, op)}
}
