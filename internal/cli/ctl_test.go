package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// ctlServer starts a real balancer over a real store behind the admin API
// and returns the API's URL.
func ctlServer(t *testing.T, adminToken string) (string, *balancer.Balancer) {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewUnstartedServer(nil)
	b, err := balancer.New(balancer.Options{Store: st, Logger: log, AdminURL: "http://" + srv.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = api.New(b, api.Options{AdminToken: adminToken, Logger: log})
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	return srv.URL, b
}

// runCtl runs "fulcrum <args>" in-process and returns its output and the
// exit status Main would return.
func runCtl(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := NewRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

// mustCtl runs ctl against admin and fails unless it exits 0.
func mustCtl(t *testing.T, admin string, args ...string) string {
	t.Helper()
	out, errOut, code := runCtl(t, "", append([]string{"ctl", "--admin", admin}, args...)...)
	if code != 0 {
		t.Fatalf("fulcrum ctl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

var idRE = regexp.MustCompile(`(?m)^id\s+(\S+)$`)
var tokenRE = regexp.MustCompile(`(?m)^token\s+(\S+)$`)

func TestCtlWorkflow(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")

	if out := mustCtl(t, admin, "groups"); !strings.Contains(out, "no groups") {
		t.Errorf("groups on an empty balancer: %q", out)
	}
	out := mustCtl(t, admin, "create", "prime", "--front-door", "127.0.0.1:0", "--strategy", "least-loaded", "--param", "tolerance=1.1", "--param", "dampening=0.25", "--report-interval", "50ms")
	if !strings.Contains(out, "group prime created") {
		t.Errorf("create: %q", out)
	}
	out = mustCtl(t, admin, "groups")
	if !strings.Contains(out, "NAME") || !regexp.MustCompile(`prime\s+http\s+http://127\.0\.0\.1:\d+\s+on-demand\s+least-loaded\s+0/0 active\s+api`).MatchString(out) {
		t.Errorf("groups table:\n%s", out)
	}

	out = mustCtl(t, admin, "add", "prime", "http://127.0.0.1:9001", "--weight", "2")
	m := idRE.FindStringSubmatch(out)
	if m == nil || !tokenRE.MatchString(out) {
		t.Fatalf("add did not print id and token:\n%s", out)
	}
	id := m[1]

	out = mustCtl(t, admin, "show", "prime")
	for _, col := range []string{"ID", "ADDRESS", "STATE", "WEIGHT", "LOAD", "EFFECTIVE", "ADVISORY", "SHED", "REPORT AGE", "BINDINGS", "REBINDS", "PROXIED", "REDIRECTED", "FAILURES"} {
		if !strings.Contains(out, col) {
			t.Errorf("show lacks column %s:\n%s", col, out)
		}
	}
	if !regexp.MustCompile(id + `\s+http://127\.0\.0\.1:9001\s+active\s+2\s+-\s+-\s+nominal\s+0\s+-\s+0\s+0\s+0\s+0\s+0`).MatchString(out) {
		t.Errorf("show row:\n%s", out)
	}
	if !strings.Contains(out, "dampening=0.25") || !strings.Contains(out, "tolerance=1.1") {
		t.Errorf("show params:\n%s", out)
	}

	if out := mustCtl(t, admin, "set", "prime", "--strategy", "round-robin", "--binding", "per-request"); !strings.Contains(out, "per-request, strategy round-robin") {
		t.Errorf("set: %q", out)
	}
	if out := mustCtl(t, admin, "set", "prime", "--max-inflight", "2", "--queue-limit", "50", "--queue-order", "cost"); !strings.Contains(out, "max_inflight 2, queue of 50 (cost, timeout 1s)") {
		t.Errorf("set queue: %q", out)
	}
	if out := mustCtl(t, admin, "set", "prime", "--queue-limit", "0"); strings.Contains(out, "queue") {
		t.Errorf("set queue off: %q", out)
	}
	if out := mustCtl(t, admin, "drain", "prime", id); !strings.Contains(out, "draining") {
		t.Errorf("drain: %q", out)
	}
	if out := mustCtl(t, admin, "activate", "prime", id); !strings.Contains(out, "active") {
		t.Errorf("activate: %q", out)
	}
	out = mustCtl(t, admin, "status")
	if !strings.Contains(out, "group prime: http, per-request, strategy round-robin") || !strings.Contains(out, id) {
		t.Errorf("status:\n%s", out)
	}
	if out := mustCtl(t, admin, "remove", "prime", id); !strings.Contains(out, "draining") {
		t.Errorf("remove: %q", out)
	}
	if out := mustCtl(t, admin, "delete", "prime"); !strings.Contains(out, "deleted") {
		t.Errorf("delete: %q", out)
	}
	if out := mustCtl(t, admin, "groups"); !strings.Contains(out, "no groups") {
		t.Errorf("groups after delete: %q", out)
	}
}

func TestCtlJSON(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")
	mustCtl(t, admin, "create", "g", "--front-door", "127.0.0.1:0")
	var reg struct{ ID, Token string }
	if err := json.Unmarshal([]byte(mustCtl(t, admin, "--json", "add", "g", "http://127.0.0.1:9001")), &reg); err != nil || reg.ID == "" || reg.Token == "" {
		t.Fatalf("add --json: %+v %v", reg, err)
	}
	var list struct {
		Groups []protocol.GroupStatus `json:"groups"`
	}
	if err := json.Unmarshal([]byte(mustCtl(t, admin, "groups", "--json")), &list); err != nil || len(list.Groups) != 1 || len(list.Groups[0].Replicas) != 1 {
		t.Fatalf("groups --json: %+v %v", list, err)
	}
	var st protocol.GroupStatus
	if err := json.Unmarshal([]byte(mustCtl(t, admin, "show", "g", "--json")), &st); err != nil || st.Replicas[0].ID != reg.ID {
		t.Fatalf("show --json: %+v %v", st, err)
	}
	var rs struct{ State string }
	if err := json.Unmarshal([]byte(mustCtl(t, admin, "drain", "g", reg.ID, "--json")), &rs); err != nil || rs.State != "draining" {
		t.Fatalf("drain --json: %+v %v", rs, err)
	}
}

func TestCtlApply(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")
	dir := t.TempDir()
	yamlFile := filepath.Join(dir, "groups.yaml")
	if err := os.WriteFile(yamlFile, []byte(`groups:
  - name: one
    front_door: 127.0.0.1:0
    binding: per-session
    strategy: round-robin
    report_interval: 250ms
    health: {path: /healthz, interval: 2s, timeout: 1s}
    replicas:
      - address: http://127.0.0.1:9001
        weight: 3
  - name: two
    front_door: 127.0.0.1:0
    params: {tolerance: 1.2}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustCtl(t, admin, "apply", "-f", yamlFile)
	if !strings.Contains(out, "group one created") || !strings.Contains(out, "group two created") {
		t.Fatalf("apply: %q", out)
	}
	out = mustCtl(t, admin, "show", "one")
	if !strings.Contains(out, "per-session, strategy round-robin") || !strings.Contains(out, "http://127.0.0.1:9001") {
		t.Errorf("applied group:\n%s", out)
	}

	// JSON on standard input replaces.
	stdout, errOut, code := runCtl(t, `{"name":"two","front_door":"127.0.0.1:0","binding":"per-request"}`, "ctl", "--admin", admin, "apply", "-f", "-")
	if code != 0 || !strings.Contains(stdout, "group two replaced") {
		t.Fatalf("apply -f -: %d %q %q", code, stdout, errOut)
	}

	// An unknown key is a usage error naming the file and line.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: three\nfront_door: 127.0.0.1:0\nfrontdoor: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCtl(t, "", "ctl", "--admin", admin, "apply", "-f", bad)
	if code != 2 || !strings.Contains(errOut, "bad.yaml") || !strings.Contains(errOut, "line 3") || !strings.Contains(errOut, "frontdoor") {
		t.Errorf("bad file: exit %d: %s", code, errOut)
	}
	// An invalid value is the API's 400, naming the field.
	invalid := filepath.Join(dir, "invalid.yaml")
	if err := os.WriteFile(invalid, []byte("name: three\nfront_door: 127.0.0.1:0\nparams: {dampening: 2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCtl(t, "", "ctl", "--admin", admin, "apply", "-f", invalid)
	if code != 1 || !strings.Contains(errOut, "params.dampening") || !strings.Contains(errOut, "[0,1)") {
		t.Errorf("invalid value: exit %d: %s", code, errOut)
	}
}

func TestCtlErrors(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")
	mustCtl(t, admin, "create", "g", "--front-door", "127.0.0.1:0")
	mustCtl(t, admin, "add", "g", "http://127.0.0.1:9001")
	tests := []struct {
		name string
		args []string
		code int
		says []string
	}{
		{"unknown group", []string{"show", "nope"}, 1, []string{"unknown group", "404"}},
		{"exists", []string{"create", "g", "--front-door", "127.0.0.1:0"}, 1, []string{"already exists", "412"}},
		{"invalid param", []string{"set", "g", "--param", "dampening=1.5"}, 1, []string{"params.dampening", "[0,1)", "400"}},
		{"unknown strategy", []string{"set", "g", "--strategy", "fastest"}, 1, []string{"strategy", "least-loaded"}},
		{"duplicate", []string{"add", "g", "http://127.0.0.1:9001"}, 1, []string{"already registered", "409"}},
		{"bad address", []string{"add", "g", "localhost:9001"}, 1, []string{"address", "http://"}},
		{"unknown replica", []string{"drain", "g", "r-nope"}, 1, []string{"unknown replica", "404"}},
		{"missing argument", []string{"show"}, 2, []string{"GROUP"}},
		{"extra argument", []string{"groups", "x"}, 2, []string{"takes 0 argument"}},
		{"missing front door", []string{"create", "h"}, 2, []string{"--front-door"}},
		{"bad param", []string{"set", "g", "--param", "dampening"}, 2, []string{"KEY=VALUE"}},
		{"nothing to set", []string{"set", "g"}, 2, []string{"nothing to set"}},
		{"queue order alone", []string{"set", "g", "--queue-order", "cost"}, 2, []string{"need --queue-limit"}},
		{"queue without max inflight", []string{"set", "g", "--queue-limit", "10"}, 1, []string{"queue.limit", "400"}},
		{"unknown flag", []string{"groups", "--frobnicate"}, 2, []string{"frobnicate"}},
		{"bad weight", []string{"add", "g", "http://127.0.0.1:9002", "--weight", "heavy"}, 2, []string{"weight"}},
		{"zero weight", []string{"add", "g", "http://127.0.0.1:9002", "--weight", "0"}, 2, []string{"--weight 0", "leave --weight out"}},
		{"unknown command", []string{"frobnicate"}, 2, []string{"unknown command"}},
		{"apply without file", []string{"apply"}, 2, []string{"-f FILE"}},
		{"bad duration", []string{"create", "h", "--front-door", "127.0.0.1:0", "--report-interval", "soon"}, 2, []string{"report-interval"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, errOut, code := runCtl(t, "", append([]string{"ctl", "--admin", admin}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errOut)
			}
			for _, s := range tc.says {
				if !strings.Contains(errOut, s) {
					t.Errorf("error %q does not say %q", errOut, s)
				}
			}
		})
	}
}

func TestCtlToken(t *testing.T) {
	admin, _ := ctlServer(t, "tok")
	_, errOut, code := runCtl(t, "", "ctl", "--admin", admin, "groups")
	if code != 1 || !strings.Contains(errOut, "401") {
		t.Fatalf("without a token: exit %d: %s", code, errOut)
	}
	mustCtl(t, admin, "--token", "tok", "groups")
	// The environment supplies both.
	t.Setenv("FULCRUM_ADMIN", admin)
	t.Setenv("FULCRUM_TOKEN", "tok")
	if _, errOut, code := runCtl(t, "", "ctl", "groups"); code != 0 {
		t.Fatalf("from the environment: exit %d: %s", code, errOut)
	}
	// A flag wins over the environment.
	if _, errOut, code := runCtl(t, "", "ctl", "--token", "wrong", "groups"); code != 1 || !strings.Contains(errOut, "401") {
		t.Fatalf("--token over FULCRUM_TOKEN: exit %d: %s", code, errOut)
	}
}

func TestCtlUnreachable(t *testing.T) {
	t.Parallel()
	// A listener closed at once: nothing answers on its port.
	srv := httptest.NewServer(nil)
	url := srv.URL
	srv.Close()
	_, errOut, code := runCtl(t, "", "ctl", "--admin", url, "groups")
	if code != 1 || !strings.Contains(errOut, "cannot reach the admin API") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, errOut, code = runCtl(t, "", "ctl", "--admin", "not a url", "groups")
	if code != 2 || !strings.Contains(errOut, "admin URL") {
		t.Fatalf("bad --admin: exit %d: %s", code, errOut)
	}
}

func TestCtlHelp(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"", "groups", "show", "status", "create", "apply", "delete", "set", "add", "drain", "activate", "remove", "unblock", "list"} {
		args := []string{"ctl"}
		if sub != "" {
			args = append(args, sub)
		}
		out, errOut, code := runCtl(t, "", append(args, "--help")...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("fulcrum %s --help: exit %d: %s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
}
