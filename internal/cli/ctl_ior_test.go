package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/ctl"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// TestCtlIOR: "ctl ior GROUP --also" prints the group's IOR with the
// extra front doors as alternate addresses, typed like the group's IOR;
// --corbaloc the same addresses as a corbaloc URL; bad input is a usage
// error naming it; an HTTP group has no reference.
func TestCtlIOR(t *testing.T) {
	t.Parallel()
	admin, _ := ctlServer(t, "")
	file := filepath.Join(t.TempDir(), "g.yaml")
	if err := os.WriteFile(file, []byte("name: primes\nprotocol: giop\nfront_door: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCtl(t, admin, "apply", "-f", file)
	mustCtl(t, admin, "create", "web", "--front-door", "127.0.0.1:0")
	c, err := ctl.New(admin, "")
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := c.Group(t.Context(), "primes")
	if err != nil || st.Reference == nil {
		t.Fatalf("the group's status: %+v, %v", st, err)
	}
	own, err := ior.ParseCorbaloc(st.Reference.Corbaloc)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{own.Addresses[0].HostPort(), "10.0.0.2:2809", "[::1]:2810"}

	out := strings.TrimSpace(mustCtl(t, admin, "ior", "primes", "--also", "10.0.0.2:2809,[::1]:2810"))
	ref, err := ior.ParseStringified(out)
	if err != nil {
		t.Fatalf("ctl ior printed %q: %v", out, err)
	}
	var got []string
	for _, ep := range ref.Endpoints() {
		got = append(got, ep.Address.HostPort())
		if string(ep.Profile.ObjectKey) != "primes" {
			t.Errorf("endpoint %+v: object key %q, want primes", ep, ep.Profile.ObjectKey)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || len(ref.Profiles) != 1 || ref.TypeID != "IDL:omg.org/CORBA/Object:1.0" {
		t.Errorf("ctl ior: type %q, %d profiles, endpoints %v; want the group's type, one profile, %v", ref.TypeID, len(ref.Profiles), got, want)
	}

	out = strings.TrimSpace(mustCtl(t, admin, "ior", "primes", "--also", "10.0.0.2:2809", "--also", "[::1]:2810", "--corbaloc"))
	if wantLoc := "corbaloc:iiop:1.2@" + want[0] + ",iiop:1.2@10.0.0.2:2809,iiop:1.2@[::1]:2810/primes"; out != wantLoc {
		t.Errorf("ctl ior --corbaloc: %q, want %q", out, wantLoc)
	}

	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"ior", "primes", "--also", "10.0.0.2"}, 2, []string{`"10.0.0.2"`, "no port"}},
		{[]string{"ior", "primes", "--also", "h:70000"}, 2, []string{`"h:70000"`, "1..65535"}},
		{[]string{"ior", "web"}, 1, []string{`"web"`, "no object reference", "http"}},
		{[]string{"ior", "nosuch"}, 1, []string{"nosuch"}},
		{[]string{"ior"}, 2, []string{"GROUP"}},
	} {
		_, errOut, code := runCtl(t, "", append([]string{"ctl", "--admin", admin}, tc.args...)...)
		if code != tc.code || !containsEvery(errOut, tc.want) {
			t.Errorf("ctl %s: exit %d, %q; want exit %d naming %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.want)
		}
	}
}

func containsEvery(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
