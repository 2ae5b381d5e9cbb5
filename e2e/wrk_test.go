//go:build linux

package e2e

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// perRequestConfig is a balancer with one per-request group, prime, whose
// replicas are static members at the two addresses given.
const perRequestConfig = `
admin: 127.0.0.1:0
data_dir: %s
groups:
  - name: prime
    front_door: 127.0.0.1:0
    binding: per-request
    strategy: least-connections
    timeouts: {request: 10s}
    replicas:
      - address: %s
      - address: %s
`

// wrkResult is what wrk's summary says.
type wrkResult struct {
	requests                             int
	connect, read, write, timeout, non2x int
}

var (
	wrkRequests = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
	wrkSocket   = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkNon2xx   = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses: (\d+)`)
)

func parseWrk(t *testing.T, out string) wrkResult {
	t.Helper()
	var r wrkResult
	m := wrkRequests.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no request count in wrk's output:\n%s", out)
	}
	r.requests, _ = strconv.Atoi(m[1])
	if m := wrkSocket.FindStringSubmatch(out); m != nil { // printed only when there are some
		r.connect, _ = strconv.Atoi(m[1])
		r.read, _ = strconv.Atoi(m[2])
		r.write, _ = strconv.Atoi(m[3])
		r.timeout, _ = strconv.Atoi(m[4])
	}
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil { // idem
		r.non2x, _ = strconv.Atoi(m[1])
	}
	return r
}

// A per-request front door serves wrk's load without an error, and passes
// request bodies through to the replicas.
func TestPerRequestFrontDoorServesWrkLoad(t *testing.T) {
	t.Parallel()
	wrk := needTool(t, "wrk")
	curl := needTool(t, "curl")
	ctx := testContext(t, 60*time.Second)
	hc := apiClient(t)

	_, r1 := startPrime(t, "--listen", "127.0.0.1:0")
	_, r2 := startPrime(t, "--listen", "127.0.0.1:0")
	bal := startServe(t, "--config", writeConfig(t, perRequestConfig, filepath.Join(t.TempDir(), "data"), r1, r2))
	g, err := getGroup(ctx, hc, bal.admin, "prime")
	if err != nil {
		t.Fatal(err)
	}
	front := g.Advertise

	out := runTool(ctx, t, wrk, "-t2", "-c16", "-d3s", "--timeout", "5s", front+"/prime/1000003")
	res := parseWrk(t, out)
	t.Logf("wrk: %d requests; socket errors connect %d read %d write %d timeout %d; non-2xx %d",
		res.requests, res.connect, res.read, res.write, res.timeout, res.non2x)
	if res.requests < 100 {
		t.Errorf("wrk made only %d requests in 3s:\n%s", res.requests, out)
	}
	if res.connect+res.read+res.write+res.timeout+res.non2x != 0 {
		t.Errorf("wrk saw errors through the front door:\n%s", out)
	}

	// The balancer counted the calls it proxied, to both replicas, and no
	// failure.
	g, err = getGroup(ctx, hc, bal.admin, "prime")
	if err != nil {
		t.Fatal(err)
	}
	var proxied uint64
	for _, r := range g.Replicas {
		proxied += r.Counters.Proxied
		if r.Counters.Proxied == 0 {
			t.Errorf("replica %s (%s) got no call of wrk's load", r.ID, r.Address)
		}
		if r.Counters.Failures != 0 {
			t.Errorf("replica %s (%s): %d failed calls", r.ID, r.Address, r.Counters.Failures)
		}
	}
	if proxied < uint64(res.requests) {
		t.Errorf("the balancer proxied %d calls, fewer than wrk's %d", proxied, res.requests)
	}

	// A POST body passes through, with curl (Content-Length)...
	body := make([]byte, 256<<10)
	rand.Read(body)
	file := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	echoed := runTool(ctx, t, curl, "-sS", "--fail", "--max-time", "10", "-H", "Content-Type: application/octet-stream",
		"--data-binary", "@"+file, front+"/echo")
	if echoed != string(body) {
		t.Errorf("curl POST /echo through the front door: got %d bytes back, want the %d bytes sent", len(echoed), len(body))
	}

	// ... and streamed (chunked, no length) from a Go client.
	pr, pw := io.Pipe()
	go func() {
		for off := 0; off < len(body); off += 10000 {
			if _, err := pw.Write(body[off:min(off+10000, len(body))]); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, front+"/echo", pr)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
		t.Errorf("chunked POST /echo through the front door: status %d, %d bytes back (err %v), want 200 and the %d bytes sent",
			resp.StatusCode, len(got), err, len(body))
	}
}
