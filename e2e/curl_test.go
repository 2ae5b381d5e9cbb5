//go:build linux

package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// onDemandConfig is a balancer with one on-demand group, prime, reporting
// and probing fast so that tests wait little.
const onDemandConfig = `
admin: 127.0.0.1:0
data_dir: %s
groups:
  - name: prime
    front_door: 127.0.0.1:0
    binding: on-demand
    strategy: least-loaded
    report_interval: 200ms
    health: {path: /healthz, interval: 200ms, timeout: 150ms}
`

// curl -L through an on-demand front door: the front door redirects, curl
// follows, and the two replicas that registered themselves answer.
func TestCurlThroughOnDemandFrontDoor(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl")
	ctx := testContext(t, 60*time.Second)
	hc := apiClient(t)

	bal := startServe(t, "--config", writeConfig(t, onDemandConfig, filepath.Join(t.TempDir(), "data")))
	for range 2 {
		startPrime(t, "--listen", "127.0.0.1:0", "--register", bal.admin, "--group", "prime")
	}
	g := waitReported(ctx, t, hc, bal.admin, "prime", 2)
	ids := map[string]bool{}
	for _, r := range g.Replicas {
		ids[r.ID] = true
	}

	// The front door's own answer: a 307 to a replica, naming it.
	head := runTool(ctx, t, curl, "-sS", "--max-time", "10", "-o", "/dev/null", "-D", "-", g.Advertise+"/prime/7919")
	if !strings.HasPrefix(head, "HTTP/1.1 307") {
		t.Fatalf("front door answered without -L:\n%s", head)
	}
	m := regexp.MustCompile(`(?mi)^Fulcrum-Replica: (\S+)\r?$`).FindStringSubmatch(head)
	if m == nil || !ids[m[1]] {
		t.Fatalf("307 does not name a replica of %v in Fulcrum-Replica:\n%s", ids, head)
	}
	if !regexp.MustCompile(`(?mi)^Fulcrum-Group: prime\r?$`).MatchString(head) || !regexp.MustCompile(`(?mi)^Location: http://127\.0\.0\.1:\d+/prime/7919\r?$`).MatchString(head) {
		t.Fatalf("307 lacks Fulcrum-Group or Location to the replica:\n%s", head)
	}

	// curl -L follows to the replicas; both get picked over the calls.
	seen := map[string]int{}
	const calls = 20
	for range calls {
		body := runTool(ctx, t, curl, "-sS", "-L", "--fail", "--max-time", "10", g.Advertise+"/prime/7919")
		var a primeAnswer
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatalf("curl -L answer %q: %v", body, err)
		}
		if a.N != 7919 || !a.Prime || !ids[a.ServedBy] {
			t.Fatalf("curl -L answer %+v, want 7919 prime served by one of %v", a, ids)
		}
		seen[a.ServedBy]++
	}
	t.Logf("%d calls with curl -L served by %v", calls, seen)
	if len(seen) != 2 {
		t.Errorf("only %v answered %d calls through the front door, want both replicas", seen, calls)
	}

	// fulcrum ctl shows the group and its replicas.
	code, stdout, stderr := run(ctx, t, "fulcrum ctl", "ctl", "--admin", bal.admin, "show", "prime")
	if code != 0 {
		t.Fatalf("fulcrum ctl show prime: exit status %d; stderr:\n%s", code, stderr)
	}
	for id := range ids {
		if !strings.Contains(stdout, id) {
			t.Errorf("fulcrum ctl show prime does not list replica %s:\n%s", id, stdout)
		}
	}
}
