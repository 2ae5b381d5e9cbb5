//go:build linux

package omniorb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

var (
	fulcrumOnce sync.Once
	fulcrumBin  string
	fulcrumErr  error
)

// needFulcrum builds the fulcrum binary once per test run (or takes
// $FULCRUM_BIN) and returns it.
func needFulcrum(t *testing.T) string {
	t.Helper()
	fulcrumOnce.Do(func() {
		if bin := os.Getenv("FULCRUM_BIN"); bin != "" {
			fulcrumBin = bin
			return
		}
		bin := filepath.Join(buildDir, "fulcrum")
		args := []string{"build", "-o", bin}
		if os.Getenv("FULCRUM_E2E_RACE") == "1" {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/fulcrum")...)
		cmd.Dir = filepath.Join("..", "..") // the module root
		if out, err := cmd.CombinedOutput(); err != nil {
			fulcrumErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		fulcrumBin = bin
	})
	if fulcrumErr != nil {
		t.Fatal(fulcrumErr)
	}
	return fulcrumBin
}

// balancer is a running "fulcrum serve".
type balancer struct {
	*proctest.Proc
	admin string // admin API base URL
	hc    *http.Client
}

var servingLine = regexp.MustCompile(`msg="fulcrum serving" admin=(\S+)`)

// startBalancer runs "fulcrum serve" with a config of the given groups
// (YAML list items, indented by four spaces) and an admin API on a free
// port.
func startBalancer(ctx context.Context, t *testing.T, groups string) *balancer {
	t.Helper()
	bin := needFulcrum(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf("admin: 127.0.0.1:0\ndata_dir: %s\nlog_level: debug\ngroups:\n%s", filepath.Join(dir, "data"), groups)
	path := filepath.Join(dir, "fulcrum.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := proctest.Start(t, "fulcrum serve", proctest.Options{}, bin, "serve", "--config", path)
	m := p.WaitOutput(ctx, t, p.Stderr, servingLine)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &balancer{Proc: p, admin: m[1], hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// do sends a JSON request to the admin API and decodes a JSON answer into
// out (when not nil); a status other than want fails the test.
func (b *balancer) do(ctx context.Context, t *testing.T, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.admin+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	j, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, j)
	}
	if out != nil {
		if err := json.Unmarshal(j, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, j, err)
		}
	}
}

// groupStatus is the part of GET /v1/groups/{name} the tests read.
type groupStatus struct {
	Name      string `json:"name"`
	Protocol  string `json:"protocol"`
	Binding   string `json:"binding"`
	Strategy  string `json:"strategy"`
	Listening string `json:"listening"`
	Reference struct {
		Corbaloc string `json:"corbaloc"`
		IOR      string `json:"ior"`
	} `json:"reference"`
	Replicas []replicaStatus `json:"replicas"`
}

type replicaStatus struct {
	ID       string   `json:"id"`
	Address  string   `json:"address"`
	State    string   `json:"state"`
	Load     *float64 `json:"load"`
	Advisory string   `json:"advisory"`
	Applied  uint64   `json:"applied"` // replicated groups
	Counters struct {
		Bindings   uint64 `json:"bindings"`
		Rebinds    uint64 `json:"rebinds"`
		Proxied    uint64 `json:"proxied"`
		Redirected uint64 `json:"redirected"`
		Failures   uint64 `json:"failures"`
	} `json:"counters"`
}

func (b *balancer) group(ctx context.Context, t *testing.T, name string) groupStatus {
	t.Helper()
	var g groupStatus
	b.do(ctx, t, http.MethodGet, "/v1/groups/"+name, nil, http.StatusOK, &g)
	return g
}

// register registers a replica by its reference (IOR: or corbaloc:) and
// returns its id.
func (b *balancer) register(ctx context.Context, t *testing.T, group, ref string) string {
	t.Helper()
	var out struct {
		ID string `json:"id"`
	}
	b.do(ctx, t, http.MethodPost, "/v1/groups/"+group+"/replicas", map[string]any{"address": ref}, http.StatusCreated, &out)
	return out.ID
}

// metric returns the sum of the samples of a metric whose labels contain
// all of labels (`name="value"` each), from GET /metrics.
func (b *balancer) metric(ctx context.Context, t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.admin+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		if !containsAll(line, labels...) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}
