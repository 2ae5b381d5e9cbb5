//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// SIGTERM while a call is in flight through a per-request front door: the
// front door stops accepting, the call completes, the process exits 0.
//
// The call in flight is a POST /echo whose body the test is still sending:
// it stays in flight exactly as long as the test wants, however fast the
// machine (a long GET /count/{x} would race the signal).
func TestSigtermFinishesCallInFlight(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	hc := apiClient(t)

	_, replica := startPrime(t, "--listen", "127.0.0.1:0")
	cfg := writeConfig(t, `
admin: 127.0.0.1:0
data_dir: %s
shutdown_timeout: 30s
groups:
  - name: prime
    front_door: 127.0.0.1:0
    binding: per-request
    replicas:
      - address: %s
`, filepath.Join(t.TempDir(), "data"), replica)
	bal := startServe(t, "--config", cfg)
	g, err := getGroup(ctx, hc, bal.admin, "prime")
	if err != nil {
		t.Fatal(err)
	}

	first, second := bytes.Repeat([]byte("a"), 4096), bytes.Repeat([]byte("b"), 4096)
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.Advertise+"/echo", pr)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   []byte
		err    error
	}
	answered := make(chan answer, 1)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{status: resp.StatusCode, body: b, err: err}
	}()
	if _, err := pw.Write(first); err != nil {
		t.Fatal(err)
	}
	proctest.Poll(ctx, t, "the call in flight to the replica", func() (bool, string) {
		g, err := getGroup(ctx, hc, bal.admin, "prime")
		if err != nil {
			return false, err.Error()
		}
		return len(g.Replicas) == 1 && g.Replicas[0].Inflight == 1, fmt.Sprintf("%+v", g.Replicas)
	})

	bal.Signal(t, syscall.SIGTERM)
	bal.WaitOutput(ctx, t, bal.Stderr, regexp.MustCompile(`msg="shutting down" signal=terminated`))
	// The front door stops accepting connections while the call goes on.
	proctest.Poll(ctx, t, "the front door refusing new connections", func() (bool, string) {
		c, err := net.DialTimeout("tcp", hostPort(g.Advertise), time.Second)
		if err != nil {
			return true, ""
		}
		c.Close()
		return false, "connected"
	})
	select {
	case a := <-answered:
		t.Fatalf("the call ended before its body was sent: %+v", a)
	default:
	}

	if _, err := pw.Write(second); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var a answer
	select {
	case a = <-answered:
	case <-ctx.Done():
		t.Fatal("no answer to the call in flight")
	}
	if a.err != nil || a.status != http.StatusOK || !bytes.Equal(a.body, append(first, second...)) {
		t.Errorf("call in flight at SIGTERM: status %d, %d bytes, err %v; want 200 and the %d bytes sent",
			a.status, len(a.body), a.err, len(first)+len(second))
	}
	if code := bal.Exit(ctx, t); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
	if !regexp.MustCompile(`msg=stopped`).MatchString(bal.Stderr.String()) {
		t.Errorf("no \"stopped\" in the log")
	}
}
