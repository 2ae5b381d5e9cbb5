package cli

import (
	"strings"
	"testing"
)

// TestCtlSessions: "ctl sessions" on a real balancer prints the (empty)
// table of a group without affinity rules, --json the API's answer; a
// --limit out of range is a usage error (2), an unknown group the API's
// 404 (1); --help says what the command shows.
func TestCtlSessions(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")
	mustCtl(t, admin, "create", "objects", "--front-door", "127.0.0.1:0")
	out := mustCtl(t, admin, "sessions", "objects")
	if !strings.Contains(out, "RULE") || !strings.Contains(out, "0 of 0 entries") {
		t.Errorf("sessions of a group without rules:\n%s", out)
	}
	if out := mustCtl(t, admin, "sessions", "objects", "--json", "--limit", "5"); !strings.Contains(out, `"sessions": []`) || !strings.Contains(out, `"total": 0`) {
		t.Errorf("--json:\n%s", out)
	}
	if _, errOut, code := runCtl(t, "", "ctl", "--admin", admin, "sessions", "objects", "--limit", "0"); code != 2 || !strings.Contains(errOut, "--limit 0: must be in [1, 10000]") {
		t.Errorf("--limit 0: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCtl(t, "", "ctl", "--admin", admin, "sessions", "nope"); code != 1 || !strings.Contains(errOut, "nope") {
		t.Errorf("unknown group: exit %d, %s", code, errOut)
	}
	if out, _, code := runCtl(t, "", "ctl", "sessions", "--help"); code != 0 || !strings.Contains(out, "client-activated") || !strings.Contains(out, "--after") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
}
