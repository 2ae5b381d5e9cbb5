package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestCtlConnectionsRefusals: "ctl connections" refuses a --limit out of
// range before asking (exit 2, naming the flag), and passes the API's 404
// and 400 on (exit 1, with the API's message and code).
func TestCtlConnectionsRefusals(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")
	mustCtl(t, admin, "create", "web", "--front-door", "127.0.0.1:0")
	for _, args := range [][]string{{"--limit", "0"}, {"--limit", "10001"}, {"--limit", "-3", "--all"}} {
		_, errOut, code := runCtl(t, "", append([]string{"ctl", "--admin", admin, "connections", "web"}, args...)...)
		if code != 2 || !strings.Contains(errOut, "--limit "+args[1]+": must be in [1, 10000]") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
	_, errOut, code := runCtl(t, "", "ctl", "--admin", admin, "connections", "nope")
	if code != 1 || !strings.Contains(errOut, "unknown_group") || !strings.Contains(errOut, "nope") {
		t.Errorf("unknown group: exit %d: %s", code, errOut)
	}
	_, errOut, code = runCtl(t, "", "ctl", "--admin", admin, "connections")
	if code != 2 || !strings.Contains(errOut, "GROUP") {
		t.Errorf("no group: exit %d: %s", code, errOut)
	}
	out := mustCtl(t, admin, "connections", "web")
	if out != "no connections open in group web\n" {
		t.Errorf("empty table: %q", out)
	}
	for _, args := range [][]string{{"--json"}, {"--json", "--all"}} {
		var list protocol.ConnectionList
		out := mustCtl(t, admin, append([]string{"connections", "web"}, args...)...)
		if err := json.Unmarshal([]byte(out), &list); err != nil || list.Connections == nil || len(list.Connections) != 0 || list.Total != 0 {
			t.Errorf("%v: %q (%v), want an empty list", args, out, err)
		}
	}
	if out, _, code := runCtl(t, "", "ctl", "connections", "--help"); code != 0 || !strings.Contains(out, "--after") || !strings.Contains(out, "--all") {
		t.Errorf("--help: exit %d: %s", code, out)
	}
}
