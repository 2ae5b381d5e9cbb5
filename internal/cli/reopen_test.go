package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/logfile"
)

// recordHandler sends each record's message on a channel.
type recordHandler struct{ msgs chan<- string }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.msgs <- r.Message
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// TestReopenOnSIGUSR1: a SIGUSR1 sent to the process reopens the access
// log's file at its path; without a file it is logged, and the process
// lives on either way.
func TestReopenOnSIGUSR1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	f, err := logfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msgs := make(chan string, 4)
	log := slog.New(recordHandler{msgs})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next := func() string {
		select {
		case m := <-msgs:
			return m
		case <-ctx.Done():
			t.Fatal("no log line after SIGUSR1")
			return ""
		}
	}

	access := &accessSink{w: f, f: f}
	stop := reopenOnSIGUSR1(access.reopen, log)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if m := next(); m != "access log reopened" {
		t.Fatalf("log %q, want access log reopened", m)
	}
	if _, err := f.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "after\n" {
		t.Errorf("new file: %q, %v; want the line written after the reopen", b, err)
	}
	stop()

	stop = reopenOnSIGUSR1((&accessSink{}).reopen, log)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if m := next(); !strings.Contains(m, "no access log file") {
		t.Errorf("log %q, want the no-file message", m)
	}
}
