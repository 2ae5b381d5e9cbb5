//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// balancerProc is a running "fulcrum serve".
type balancerProc struct {
	*proctest.Proc
	admin string // admin API base URL
}

var servingLine = regexp.MustCompile(`msg="fulcrum serving" admin=(\S+)`)

// startServe runs "fulcrum serve" with args and waits until it serves.
func startServe(t *testing.T, args ...string) *balancerProc {
	t.Helper()
	return startServeWith(t, fulcrumBin, nil, args...)
}

// startServeWith is startServe running bin (a failpoint binary, say) with
// env added to the environment.
func startServeWith(t *testing.T, bin string, env []string, args ...string) *balancerProc {
	t.Helper()
	p := proctest.Start(t, "fulcrum serve", proctest.Options{Env: env}, bin, append([]string{"serve"}, args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := p.WaitOutput(ctx, t, p.Stderr, servingLine)
	return &balancerProc{Proc: p, admin: m[1]}
}

var listeningLine = regexp.MustCompile(`(?m)^listening on (\S+)$`)

// startPrime runs "fulcrum backend prime" with args and returns it with
// the URL it listens on.
func startPrime(t *testing.T, args ...string) (*proctest.Proc, string) {
	t.Helper()
	p := startProc(t, "fulcrum backend prime", append([]string{"backend", "prime"}, args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := p.WaitOutput(ctx, t, p.Stdout, listeningLine)
	return p, m[1]
}

// groupStatus is the part of GET /v1/groups/{name} the tests read.
type groupStatus struct {
	Name      string          `json:"name"`
	Binding   string          `json:"binding"`
	Strategy  string          `json:"strategy"`
	Params    map[string]any  `json:"params"`
	Advertise string          `json:"advertise"`
	Listening string          `json:"listening"`
	Source    string          `json:"source"`
	Warning   string          `json:"warning"`
	Replicas  []replicaStatus `json:"replicas"`
	Revision  int64           `json:"revision"`
}

type replicaStatus struct {
	ID          string   `json:"id"`
	Address     string   `json:"address"`
	State       string   `json:"state"`
	Load        *float64 `json:"load"`
	ReportAgeMS *int64   `json:"report_age_ms"`
	Inflight    int64    `json:"inflight"`
	// Metrics are the standard metrics of the replica's last report.
	Metrics  map[string]float64 `json:"metrics"`
	Counters struct {
		Bindings   uint64 `json:"bindings"`
		Rebinds    uint64 `json:"rebinds"`
		Proxied    uint64 `json:"proxied"`
		Redirected uint64 `json:"redirected"`
		Failures   uint64 `json:"failures"`
	} `json:"counters"`
}

func (g groupStatus) replica(id string) (replicaStatus, bool) {
	for _, r := range g.Replicas {
		if r.ID == id {
			return r, true
		}
	}
	return replicaStatus{}, false
}

func (g groupStatus) replicaAt(address string) (replicaStatus, bool) {
	for _, r := range g.Replicas {
		if r.Address == address {
			return r, true
		}
	}
	return replicaStatus{}, false
}

// apiClient is a test's HTTP client: no shared connections with other
// tests, closed when the test ends.
func apiClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// call sends a JSON request and returns the status and body.
func call(ctx context.Context, hc *http.Client, method, url string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// mustCall is call, failing the test on an error or a status other than
// want, and decoding the answer into out when out is not nil.
func mustCall(ctx context.Context, t *testing.T, hc *http.Client, method, url string, body any, want int, out any) {
	t.Helper()
	status, b, err := call(ctx, hc, method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, url, status, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, url, b, err)
		}
	}
}

// getGroup reads a group's status.
func getGroup(ctx context.Context, hc *http.Client, admin, name string) (groupStatus, error) {
	var g groupStatus
	status, b, err := call(ctx, hc, http.MethodGet, admin+"/v1/groups/"+name, nil)
	if err != nil {
		return g, err
	}
	if status != http.StatusOK {
		return g, fmt.Errorf("GET /v1/groups/%s: status %d: %s", name, status, b)
	}
	return g, json.Unmarshal(b, &g)
}

// waitReported waits until group name has n replicas that are active and
// have reported their load, and returns its status.
func waitReported(ctx context.Context, t *testing.T, hc *http.Client, admin, name string, n int) groupStatus {
	t.Helper()
	var g groupStatus
	proctest.Poll(ctx, t, fmt.Sprintf("%d active replicas reporting in group %s", n, name), func() (bool, string) {
		var err error
		g, err = getGroup(ctx, hc, admin, name)
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, r := range g.Replicas {
			if r.State == "active" && r.Load != nil {
				ready++
			}
		}
		return ready == n && len(g.Replicas) == n, fmt.Sprintf("%+v", g.Replicas)
	})
	return g
}

// primeAnswer is the body of GET /prime/{n} and GET /count/{x}.
type primeAnswer struct {
	N        uint64 `json:"n"`
	Prime    bool   `json:"prime"`
	X        int    `json:"x"`
	Count    int    `json:"count"`
	ServedBy string `json:"served_by"`
}

// freeAddr returns a loopback address that is free now, for a process
// to listen on later — also after a restart, when it binds it again. The
// port is drawn below Linux's ephemeral range (32768–60999 by default):
// a port-0 bind or an outgoing connection of another test, which take
// ports from that range, cannot take it in between.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(10000+rand.IntN(32768-10000)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken: draw again
		}
		ln.Close()
		return addr
	}
	t.Fatal("no free port below the ephemeral range in 100 draws")
	return ""
}

// hostPort strips the scheme of a URL.
func hostPort(url string) string {
	_, hp, _ := strings.Cut(url, "://")
	return hp
}
