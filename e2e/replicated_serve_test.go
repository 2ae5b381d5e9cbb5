//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fulcrum serve opens a replicated group's log in log.db in the data
// directory, and serves it to the group's replicas' agents only: the log
// stream answers a replica's token, and nobody else even without an
// admin token.
func TestServeReplicatedLog(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	cfg := writeConfig(t, "admin: 127.0.0.1:0\ndata_dir: %s\ngroups:\n  - name: counter\n    front_door: 127.0.0.1:0\n    binding: replicated\n    replicated: {max_payload: 64KiB, read_only: [\"GET /value\"]}\n", data)
	bal := startServe(t, "--config", cfg)
	hc := apiClient(t)
	ctx := testContext(t, 30*time.Second)
	if _, err := os.Stat(filepath.Join(data, "log.db")); err != nil {
		t.Fatalf("log.db in the data directory: %v", err)
	}
	var reg protocol.Registered
	mustCall(ctx, t, hc, "POST", bal.admin+"/v1/groups/counter/replicas", map[string]any{"address": "http://127.0.0.1:9"}, http.StatusCreated, &reg)

	if status, _, err := call(ctx, hc, "GET", bal.admin+"/v1/groups/counter/log", nil); err != nil || status != http.StatusUnauthorized {
		t.Errorf("the log stream without a token: %d (%v), want 401 even without an admin token", status, err)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", bal.admin+"/v1/groups/counter/log?from=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+reg.Token)
	stream := &http.Client{Transport: &http.Transport{}} // no timeout: a stream
	resp, err := stream.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	var ev protocol.LogEvent
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != protocol.LogEventHello {
		t.Fatalf("first line of the log stream %q (%v), want a hello", sc.Text(), sc.Err())
	}
	resp.Body.Close()

	bal.Signal(t, syscall.SIGTERM)
	if code := bal.Exit(ctx, t); code != 0 {
		t.Errorf("exit status %d after SIGTERM\n%s", code, bal.Stderr.String())
	}
}
