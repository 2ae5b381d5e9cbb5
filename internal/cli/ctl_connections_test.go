package cli

import (
	"encoding/json"
	"regexp"
	"strconv"
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

// TestCtlConnectionsThroughFrontDoor proxies real connections through a
// tcp group's front door and lists them: one line each with its client,
// replica and bytes, pages with --limit and --after, --all and --json.
func TestCtlConnectionsThroughFrontDoor(t *testing.T) {
	t.Parallel()
	admin, b := ctlServer(t, "")
	r1, _ := tcpReplica(t)
	r2, _ := tcpReplica(t)
	door := tcpGroup(t, b, "echo", r1, r2)
	var clients []string
	for _, line := range []string{"a\n", "bb\n", "ccc\n"} {
		clients = append(clients, echoThrough(t, door, line).LocalAddr().String())
	}

	// The bytes each way are not asserted here: the front door counts a
	// fresh connection's bytes only when its first wait ends (a chunk, or
	// the idle deadline). The connection table's own tests and the
	// balancer's through the API check them.
	out := mustCtl(t, admin, "connections", "echo")
	for _, c := range clients {
		want := `(?m)^\d+\s+` + regexp.QuoteMeta(c) + `\s+r-\S+\s+127\.0\.0\.1:\d+\s+\d+\s+\d+\s+\S+\s+\S+$`
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line for client %s:\n%s", c, out)
		}
	}
	if !strings.Contains(out, "3 of 3 connection(s) open in group echo\n") || strings.Contains(out, "next page") {
		t.Errorf("footer:\n%s", out)
	}
	if !strings.Contains(out, r1) || !strings.Contains(out, r2) {
		t.Errorf("both replicas should have a connection (round robin):\n%s", out)
	}

	var first protocol.ConnectionList
	if err := json.Unmarshal([]byte(mustCtl(t, admin, "connections", "echo", "--limit", "2", "--json")), &first); err != nil {
		t.Fatal(err)
	}
	if len(first.Connections) != 2 || first.Next == 0 || first.Total != 3 {
		t.Fatalf("first page %+v", first)
	}
	out = mustCtl(t, admin, "connections", "echo", "--limit", "2")
	if !strings.Contains(out, "2 of 3 connection(s) open in group echo; next page: --after "+strconv.FormatUint(first.Next, 10)) {
		t.Errorf("paged footer:\n%s", out)
	}
	out = mustCtl(t, admin, "connections", "echo", "--limit", "2", "--after", strconv.FormatUint(first.Next, 10))
	if !strings.Contains(out, clients[2]) || strings.Contains(out, clients[0]) || !strings.Contains(out, "1 of 3") {
		t.Errorf("second page:\n%s", out)
	}
	var all protocol.ConnectionList
	if err := json.Unmarshal([]byte(mustCtl(t, admin, "connections", "echo", "--all", "--limit", "1", "--json")), &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Connections) != 3 || all.Next != 0 || all.Total != 3 || all.Connections[2].Client != clients[2] {
		t.Errorf("--all --limit 1: %+v, want the 3 connections in order", all)
	}
}
