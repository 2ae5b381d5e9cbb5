//go:build linux

package failpointbuild_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench/benchtest"
	"github.com/fulcrum-lb/fulcrum/internal/failpoint"
	"github.com/fulcrum-lb/fulcrum/internal/failpoint/failpointtest"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

func TestMain(m *testing.M) { os.Exit(failpointtest.Run(m)) }

var listening = regexp.MustCompile(`listening on (\S+)`)

// startCounter starts "fulcrum backend counter" of bin (extra flags
// appended) with env added, and returns it and its address.
func startCounter(ctx context.Context, t *testing.T, bin string, env []string, extra ...string) (*proctest.Proc, string) {
	t.Helper()
	args := append([]string{"backend", "counter", "--listen", "127.0.0.1:0"}, extra...)
	p := proctest.Start(t, "counter", proctest.Options{Env: env}, bin, args...)
	return p, p.WaitOutput(ctx, t, p.Stdout, listening)[1]
}

// increment posts /increment and returns the value answered, or the
// transport error when there was no answer.
func increment(ctx context.Context, t *testing.T, base string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/increment", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /increment = %d %s", resp.StatusCode, b)
	}
	return strings.TrimSpace(string(b)), nil
}

// requireSIGKILLed waits for p to exit and fails t unless SIGKILL ended it.
func requireSIGKILLed(ctx context.Context, t *testing.T, p *proctest.Proc) {
	t.Helper()
	if code := p.Exit(ctx, t); code != -1 {
		t.Fatalf("%s exited with status %d, want death by SIGKILL", p.Name, code)
	}
	var ee *exec.ExitError
	if !errors.As(p.Err(), &ee) {
		t.Fatalf("%s: wait error %v", p.Name, p.Err())
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("%s ended with %v, want SIGKILL", p.Name, ee)
	}
}

// TestCounterHTTPBeforeReplyKills: armed for its second pass, the HTTP
// counter answers the first increment, then dies of SIGKILL on the second
// without answering it; reads before do not pass the failpoint.
func TestCounterHTTPBeforeReplyKills(t *testing.T) {
	t.Parallel()
	bin := failpointtest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, base := startCounter(ctx, t, bin, []string{failpoint.Env(map[string]string{"counterHTTPBeforeReply": failpoint.Nth(2)})})

	resp, err := http.Get(base + "/value")
	if err != nil {
		t.Fatalf("GET /value: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /value = %d", resp.StatusCode)
	}
	if v, err := increment(ctx, t, base); err != nil || v != `{"value":1}` {
		t.Fatalf("first increment = %q, %v; want {\"value\":1} (the failpoint is off the first time)", v, err)
	}
	if v, err := increment(ctx, t, base); err == nil {
		t.Fatalf("second increment answered %q, want no answer (the process killed before replying)", v)
	}
	requireSIGKILLed(ctx, t, p)
}

// TestCounterGIOPBeforeReplyKills: the GIOP servant dies of SIGKILL on an
// increment, before replying.
func TestCounterGIOPBeforeReplyKills(t *testing.T) {
	t.Parallel()
	bin := failpointtest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, ref := startCounter(ctx, t, bin, []string{failpoint.Env(map[string]string{"counterGIOPBeforeReply": failpoint.Always})}, "--giop")

	o, err := orb.New(orb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	obj, err := o.Resolve(ref)
	if err != nil {
		t.Fatalf("resolve %s: %v", ref, err)
	}
	c := backend.CounterClient{Object: obj}
	if v, err := c.Value(ctx); err != nil || v != 0 {
		t.Fatalf("value() = %d, %v; want 0", v, err)
	}
	if v, err := c.Increment(ctx); err == nil {
		t.Fatalf("increment() = %d, want no reply (the process killed before replying)", v)
	}
	requireSIGKILLed(ctx, t, p)
}

// TestReleaseBinaryHasNoFailpoints: go build ./cmd/fulcrum links nothing
// of gofail (CheckBinary refuses it; the failpoint binary passes), and the environment that kills the
// failpoint binary's counter changes nothing in the release binary's.
func TestReleaseBinaryHasNoFailpoints(t *testing.T) {
	t.Parallel()
	release := benchtest.Binary(t)
	fp := failpointtest.Binary(t)
	if err := failpoint.CheckBinary(fp); err != nil {
		t.Errorf("CheckBinary(failpoint binary) = %v", err)
	}
	if err := failpoint.CheckBinary(release); err == nil || !strings.Contains(err.Error(), "has no failpoints") {
		t.Errorf("CheckBinary(release binary) = %v, want an error saying it has no failpoints", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, base := startCounter(ctx, t, release, []string{failpoint.Env(map[string]string{"counterHTTPBeforeReply": failpoint.Always})})
	for i := 1; i <= 3; i++ {
		v, err := increment(ctx, t, base)
		if err != nil {
			t.Fatalf("increment %d of the release binary: %v", i, err)
		}
		if want := fmt.Sprintf(`{"value":%d}`, i); v != want {
			t.Fatalf("increment %d = %q, want %q", i, v, want)
		}
	}
	select {
	case <-p.Done():
		t.Fatalf("the release binary's counter exited: %v", p.Err())
	default:
	}
}
