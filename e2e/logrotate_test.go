//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// rotateConfig is a per-request group whose access log goes to a file, the
// log and the access log in JSON.
const rotateConfig = `
admin: 127.0.0.1:0
data_dir: %s
log_format: json
access_log: %s
groups:
  - name: prime
    front_door: 127.0.0.1:0
    binding: per-request
    replicas:
      - address: %s
`

// logrotate's way with a running "fulcrum serve": rename the access log,
// then SIGUSR1. Calls logged before the signal are in the renamed file,
// calls made once the balancer says it reopened the file are in a new file
// at the path, and every call is in exactly one of them. The balancer's own
// log is one JSON object per line (log_format: json).
func TestAccessLogReopensOnSIGUSR1(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 60*time.Second)
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	_, replica := startPrime(t, "--listen", "127.0.0.1:0")
	bal := startProc(t, "fulcrum serve", "serve", "--config", writeConfig(t, rotateConfig, filepath.Join(dir, "data"), path, replica))
	admin := bal.WaitOutput(ctx, t, bal.Stderr, regexp.MustCompile(`"msg":"fulcrum serving","admin":"([^"]+)"`))[1]
	g, err := getGroup(ctx, apiClient(t), admin, "prime")
	if err != nil {
		t.Fatal(err)
	}

	// One connection, calls one after another: the front door logs a
	// call before it reads the next one.
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	n := 0
	calls := func(k int) []string {
		var paths []string
		for range k {
			p := fmt.Sprintf("/prime/%d", 1000+n)
			n++
			res, err := hc.Get("http://" + g.Listening + p)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d", p, res.StatusCode)
			}
			paths = append(paths, p)
		}
		return paths
	}
	before := calls(10)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	between := calls(10) // renamed, not yet reopened: still the old file
	bal.Signal(t, syscall.SIGUSR1)
	bal.WaitOutput(ctx, t, bal.Stderr, regexp.MustCompile(`"msg":"access log reopened","path":"`+regexp.QuoteMeta(path)+`"`))
	after := calls(10)
	stopBalancer(ctx, t, bal)

	old, now := accessPaths(t, path+".1"), accessPaths(t, path)
	// The last call before the signal may be logged after the reopen.
	last := between[len(between)-1]
	wantOld := append(append([]string{}, before...), between[:len(between)-1]...)
	if got := strings.Join(old, " "); got != strings.Join(wantOld, " ") && got != strings.Join(append(wantOld, last), " ") {
		t.Errorf("renamed file has %v, want %v (and perhaps %s)", old, wantOld, last)
	}
	wantNew := after
	if len(now) > 0 && now[0] == last {
		wantNew = append([]string{last}, after...)
	}
	if strings.Join(now, " ") != strings.Join(wantNew, " ") {
		t.Errorf("new file has %v, want %v", now, wantNew)
	}
	if len(old)+len(now) != n {
		t.Errorf("%d lines in the two files, want one per call: %d", len(old)+len(now), n)
	}

	for i, line := range strings.Split(strings.TrimSuffix(bal.Stderr.String(), "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["msg"] == nil || rec["level"] == nil || rec["time"] == nil {
			t.Errorf("log line %d is not a JSON record with time, level and msg (%v): %s", i+1, err, line)
		}
	}
}

// stopBalancer sends SIGTERM and waits for a clean exit: the access log is
// complete then.
func stopBalancer(ctx context.Context, t *testing.T, bal *proctest.Proc) {
	t.Helper()
	bal.Signal(t, syscall.SIGTERM)
	if code := bal.Exit(ctx, t); code != 0 {
		t.Fatalf("fulcrum serve exited %d after SIGTERM", code)
	}
}

// accessPaths reads a JSON access log and returns the path of each line,
// in order; every line must be a whole JSON object of a 200 call.
func accessPaths(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var l struct {
			Path    string `json:"path"`
			Status  int    `json:"status"`
			Replica string `json:"replica"`
		}
		if line[len(line)-1] != '\n' || json.Unmarshal(line, &l) != nil || l.Status != http.StatusOK || l.Replica == "" {
			t.Fatalf("%s: not a whole JSON line of a 200 call: %q", filepath.Base(file), line)
		}
		paths = append(paths, l.Path)
	}
	return paths
}
