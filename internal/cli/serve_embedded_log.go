package cli

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"

	"go.uber.org/zap/zapcore"
)

// zapToSlog is a zapcore.Core that writes the entries of the embedded
// etcd member at warn level or above to a slog.Handler (fulcrum's log):
// etcd logs through zap, fulcrum through slog. Safe for concurrent use.
//
// Two kinds of etcd's warnings are not the user's concern and are written
// at debug level: those about settings fulcrum chose on purpose
// (deliberate), and everything once the member is being closed (etcd
// reports its own listeners closing as errors).
type zapToSlog struct {
	h slog.Handler
	// attrs are the fields of With, encoded.
	attrs []slog.Attr
	// closing is set when the member is being closed; shared by the
	// cores derived with With.
	closing *atomic.Bool
}

// deliberate are etcd's warnings about what fulcrum configures on
// purpose: one client port for gRPC and HTTP, and the simple auth token
// (etcd's authentication is not enabled by fulcrum).
var deliberate = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
}

// newZapToSlog writes etcd's warnings and errors to h until closing is
// set.
func newZapToSlog(h slog.Handler, closing *atomic.Bool) zapcore.Core {
	return &zapToSlog{h: h, closing: closing}
}

// slogLevel maps zap's levels from warn up on slog's.
func slogLevel(l zapcore.Level) slog.Level {
	if l >= zapcore.ErrorLevel {
		return slog.LevelError
	}
	return slog.LevelWarn
}

// Enabled holds for warn and above; Write then picks the slog level.
func (c *zapToSlog) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c *zapToSlog) With(fields []zapcore.Field) zapcore.Core {
	return &zapToSlog{h: c.h, attrs: append(slices.Clip(c.attrs), fieldAttrs(fields)...), closing: c.closing}
}

func (c *zapToSlog) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *zapToSlog) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slogLevel(e.Level)
	if deliberate[e.Message] || c.closing.Load() {
		level = slog.LevelDebug
	}
	if !c.h.Enabled(context.Background(), level) {
		return nil
	}
	r := slog.NewRecord(e.Time, level, e.Message, 0)
	r.AddAttrs(c.attrs...)
	r.AddAttrs(fieldAttrs(fields)...)
	return c.h.Handle(context.Background(), r)
}

func (c *zapToSlog) Sync() error { return nil }

// fieldAttrs encodes zap fields as slog attributes, in the fields' order.
func fieldAttrs(fields []zapcore.Field) []slog.Attr {
	attrs := make([]slog.Attr, 0, len(fields))
	for _, f := range fields {
		enc := zapcore.NewMapObjectEncoder()
		f.AddTo(enc)
		for k, v := range enc.Fields {
			attrs = append(attrs, slog.Any(k, v))
		}
	}
	return attrs
}
