package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/monitor"
)

// TestCtlSetPrintsParams: a strategy without params prints no "params"
// at all (not "params null"); one with params prints them as key=value.
func TestCtlSetPrintsParams(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")
	mustCtl(t, admin, "create", "g", "--front-door", "127.0.0.1:0")
	out := mustCtl(t, admin, "set", "g", "--strategy", "round-robin")
	if strings.Contains(out, "null") || strings.Contains(out, "params") {
		t.Errorf("set --strategy round-robin printed params: %q", out)
	}
	out = mustCtl(t, admin, "set", "g", "--strategy", "least-loaded", "--param", "tolerance=1.3")
	if !strings.Contains(out, "params ") || !strings.Contains(out, "tolerance=1.3") || strings.Contains(out, "{") {
		t.Errorf("set --param tolerance=1.3: %q", out)
	}
}

// TestCtlUnknownParam: an unknown param names itself, the strategy and the
// params the strategy has.
func TestCtlUnknownParam(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")
	mustCtl(t, admin, "create", "g", "--front-door", "127.0.0.1:0")
	_, errOut, code := runCtl(t, "", "ctl", "--admin", admin, "set", "g", "--param", "bogus=1")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"params.bogus: unknown key", "least-loaded", "dampening", "tolerance"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("error %q does not say %q", errOut, want)
		}
	}
	if strings.Contains(errOut, "(unknown)") {
		t.Errorf("error %q still says (unknown)", errOut)
	}
	_, errOut, _ = runCtl(t, "", "ctl", "--admin", admin, "set", "g", "--strategy", "round-robin", "--param", "bogus=1")
	if !strings.Contains(errOut, "params.bogus: unknown key, round-robin takes no parameters") {
		t.Errorf("round-robin: %q", errOut)
	}
}

// TestCtlAddHelpPullPath: the --pull example uses the path the monitor
// serves reports on.
func TestCtlAddHelpPullPath(t *testing.T) {
	t.Parallel()
	out, errOut, code := runCtl(t, "", "ctl", "add", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "--pull http://127.0.0.1:9003"+monitor.DefaultPullPath) {
		t.Errorf("add --help does not show the monitor's path %s:\n%s", monitor.DefaultPullPath, out)
	}
}

// TestCtlListIsGroups: "ctl list" prints what "ctl groups" prints.
func TestCtlListIsGroups(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")
	mustCtl(t, admin, "create", "g", "--front-door", "127.0.0.1:0")
	groups := mustCtl(t, admin, "groups")
	if list := mustCtl(t, admin, "list"); list != groups || !strings.Contains(list, "NAME") {
		t.Errorf("list:\n%s\ngroups:\n%s", list, groups)
	}
}

// TestCtlShowShortensIOR: "ctl show" of a GIOP group shortens a replica's
// IOR in the table; "-o wide" prints it whole; another -o is a usage error.
func TestCtlShowShortensIOR(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")
	file := filepath.Join(t.TempDir(), "g.yaml")
	if err := os.WriteFile(file, []byte("name: primes\nprotocol: giop\nfront_door: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCtl(t, admin, "apply", "-f", file)
	ref := ior.IOR{TypeID: "IDL:Prime:1.0", Profiles: []ior.Profile{ior.IIOPProfile{
		Order: cdr.BigEndian, Version: ior.V12, Host: "replica-one.example.internal", Port: 9001, ObjectKey: []byte("\x00omniPOA\x01prime-object-key"),
	}}}.String()
	if len(ref) < 100 {
		t.Fatalf("test IOR too short to need shortening: %d characters", len(ref))
	}
	mustCtl(t, admin, "add", "primes", ref)
	for _, args := range [][]string{{"show", "primes"}, {"status"}} {
		out := mustCtl(t, admin, args...)
		if strings.Contains(out, ref) || !strings.Contains(out, ref[:28]+"…"+ref[len(ref)-12:]) {
			t.Errorf("%s: IOR not shortened:\n%s", args[0], out)
		}
		out = mustCtl(t, admin, append(args, "-o", "wide")...)
		if !strings.Contains(out, ref) {
			t.Errorf("%s -o wide: IOR not whole:\n%s", args[0], out)
		}
	}
	_, errOut, code := runCtl(t, "", "ctl", "--admin", admin, "show", "primes", "-o", "yaml")
	if code != 2 || !strings.Contains(errOut, `"yaml"`) || !strings.Contains(errOut, "wide") {
		t.Errorf("-o yaml: exit %d: %s", code, errOut)
	}
}
