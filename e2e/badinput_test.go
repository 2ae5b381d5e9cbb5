//go:build linux

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// badInputConfig has a front door of each kind, both with a request
// timeout of requestTimeout.
const badInputConfig = `
admin: 127.0.0.1:0
data_dir: %s
groups:
  - name: proxied
    front_door: 127.0.0.1:0
    binding: per-request
    timeouts: {request: 1s}
    replicas:
      - address: %s
  - name: bound
    front_door: 127.0.0.1:0
    binding: on-demand
    timeouts: {request: 1s}
    replicas:
      - address: %s
`

const requestTimeout = time.Second

// rawResponse writes raw to addr and reads the status line of the answer.
func rawResponse(ctx context.Context, addr, raw string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	// Write while reading: the server may answer (and stop reading)
	// before it has everything.
	go func() { _, _ = io.WriteString(conn, raw) }()
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

// stall opens a connection to addr, sends raw (part of a request) and
// nothing more, and reports how long the server took to close it (or to
// answer and close it) and what it sent.
func stall(ctx context.Context, addr, raw string) (time.Duration, string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	start := time.Now()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := io.WriteString(conn, raw); err != nil {
		return 0, "", err
	}
	got, err := io.ReadAll(conn) // until the server closes
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return time.Since(start), string(got), fmt.Errorf("still open after %v", time.Since(start).Round(time.Millisecond))
	}
	return time.Since(start), string(got), nil // EOF or reset: closed
}

// Front doors given bad input over a raw socket: a malformed request is
// 400, oversized headers 431, and clients that send half a request and
// stall are disconnected within the request timeout while other clients
// are served.
func TestFrontDoorBadInput(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	hc := apiClient(t)
	_, replica := startPrime(t, "--listen", "127.0.0.1:0")
	bal := startServe(t, "--config", writeConfig(t, badInputConfig, filepath.Join(t.TempDir(), "data"), replica, replica))
	doors := map[string]string{}
	for _, name := range []string{"proxied", "bound"} {
		g, err := getGroup(ctx, hc, bal.admin, name)
		if err != nil {
			t.Fatal(err)
		}
		doors[name] = g.Listening
	}

	// Each exchange on a connection of its own, all at once.
	huge := strings.Repeat("a", 100<<10)
	var (
		exchanges sync.WaitGroup
		wrongMu   sync.Mutex
		wrong     []string
	)
	for name, addr := range doors {
		for _, tc := range []struct {
			what, raw, status string
		}{
			{"malformed request line", "THIS IS NOT HTTP AT ALL\r\n\r\n", "HTTP/1.1 400 "},
			// Shorter than the h2c preface net/http sniffs for: answered
			// once the sniff gives up, at the request timeout.
			{"short malformed request line", "GARBAGE\r\n\r\n", "HTTP/1.1 400 "},
			{"malformed header", "GET /prime/7 HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", "HTTP/1.1 400 "},
			{"100 KiB header", "GET /prime/7 HTTP/1.1\r\nHost: x\r\nX-Big: " + huge + "\r\n\r\n", "HTTP/1.1 431 "},
		} {
			exchanges.Go(func() {
				got, err := rawResponse(ctx, addr, tc.raw)
				if err != nil || !strings.HasPrefix(got, tc.status) {
					wrongMu.Lock()
					wrong = append(wrong, fmt.Sprintf("%s front door, %s: answered %q (%v), want %q", name, tc.what, got, err, tc.status))
					wrongMu.Unlock()
				}
			})
		}
	}
	exchanges.Wait()
	for _, w := range wrong {
		t.Error(w)
	}

	// Stalled clients: 16 per front door with half their headers sent,
	// and on the per-request door 8 more with half their body sent (an
	// on-demand door redirects without reading a body).
	type stalled struct {
		elapsed time.Duration
		got     string
		err     error
	}
	kinds := []struct {
		name, addr, raw string
		n               int
	}{
		{"proxied door, half the headers", doors["proxied"], "GET /prime/7 HTTP/1.1\r\nHost: x\r\nUser-Agent: slo", 16},
		{"bound door, half the headers", doors["bound"], "GET /prime/7 HTTP/1.1\r\nHost: x\r\nUser-Agent: slo", 16},
		{"proxied door, half the body", doors["proxied"], "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789", 8},
	}
	var (
		mu  sync.Mutex
		res = map[string][]stalled{}
		wg  sync.WaitGroup
	)
	begin := time.Now()
	for _, k := range kinds {
		for range k.n {
			wg.Go(func() {
				elapsed, got, err := stall(ctx, k.addr, k.raw)
				mu.Lock()
				res[k.name] = append(res[k.name], stalled{elapsed, got, err})
				mu.Unlock()
			})
		}
	}
	// Meanwhile other clients are served, through both doors.
	served := 0
	for time.Since(begin) < requestTimeout/2 {
		for _, addr := range doors {
			url := "http://" + addr + "/prime/7919"
			status, body, err := call(ctx, hc, http.MethodGet, url, nil)
			if err != nil || status != http.StatusOK {
				t.Fatalf("GET %s while clients stall: status %d, %v: %s", url, status, err, body)
			}
			served++
		}
	}
	wg.Wait()
	t.Logf("%d calls served in %v while 40 clients stalled", served, requestTimeout/2)

	// A stalled client is cut off at the request timeout: the connection
	// closed, or the call answered with an error status and closed.
	const slack = 750 * time.Millisecond
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var slowest time.Duration
			bad := 0
			for _, r := range res[k.name] {
				slowest = max(slowest, r.elapsed)
				var problem string
				switch {
				case r.err != nil:
					problem = r.err.Error()
				case r.elapsed > requestTimeout+slack:
					problem = fmt.Sprintf("disconnected after %v, want within the request timeout of %v (+%v)",
						r.elapsed.Round(time.Millisecond), requestTimeout, slack)
				case r.elapsed < requestTimeout/2:
					problem = fmt.Sprintf("disconnected after %v, before the request timeout of %v",
						r.elapsed.Round(time.Millisecond), requestTimeout)
				case r.got != "" && !strings.HasPrefix(r.got, "HTTP/1.1 4") && !strings.HasPrefix(r.got, "HTTP/1.1 5"):
					problem = "answered with a success before disconnecting"
				}
				if problem != "" {
					if bad == 0 {
						t.Errorf("%s; answered %.60q", problem, r.got)
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d stalled clients cut off wrongly", bad, len(res[k.name]))
			}
			t.Logf("%d stalled clients, the last cut off after %v", len(res[k.name]), slowest.Round(time.Millisecond))
		})
	}
}
