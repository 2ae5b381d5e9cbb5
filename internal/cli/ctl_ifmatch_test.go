package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var revisionRE = regexp.MustCompile(`revision\s+(\d+)`)

// revisionIn returns the first revision out prints.
func revisionIn(t *testing.T, out string) int64 {
	t.Helper()
	m := revisionRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no revision printed:\n%s", out)
	}
	rev, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// TestCtlIfMatch: show prints the revision; set, apply and delete with
// --if-match apply at that revision, print the new one, and fail naming
// the current one when the group has changed since.
func TestCtlIfMatch(t *testing.T) {
	t.Parallel()
	admin, b := ctlServer(t, "")
	mustCtl(t, admin, "create", "g", "--front-door", "127.0.0.1:0")
	shown := revisionIn(t, mustCtl(t, admin, "show", "g"))

	out := mustCtl(t, admin, "set", "g", "--strategy", "round-robin", "--if-match", strconv.FormatInt(shown, 10))
	after := revisionIn(t, out)
	if after <= shown {
		t.Fatalf("set printed revision %d, want above %d:\n%s", after, shown, out)
	}
	if got := revisionIn(t, mustCtl(t, admin, "show", "g")); got != after {
		t.Fatalf("show prints revision %d after set printed %d", got, after)
	}

	// The stale revision: exit 1, the current revision named, nothing changed.
	_, errOut, code := runCtl(t, "", "ctl", "--admin", admin, "set", "g", "--strategy", "least-loaded", "--if-match", strconv.FormatInt(shown, 10))
	if code != 1 || !strings.Contains(errOut, "revision "+strconv.FormatInt(after, 10)) {
		t.Fatalf("stale --if-match: exit %d: %s", code, errOut)
	}
	if st, _ := b.Group("g"); st.Strategy != "round-robin" {
		t.Fatalf("a refused set changed the strategy to %s", st.Strategy)
	}

	file := filepath.Join(t.TempDir(), "g.yaml")
	if err := os.WriteFile(file, []byte("name: g\nfront_door: 127.0.0.1:0\nstrategy: least-loaded\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCtl(t, "", "ctl", "--admin", admin, "apply", "-f", file, "--if-match", strconv.FormatInt(shown, 10))
	if code != 1 || !strings.Contains(errOut, "revision "+strconv.FormatInt(after, 10)) {
		t.Fatalf("stale apply --if-match: exit %d: %s", code, errOut)
	}
	out = mustCtl(t, admin, "apply", "-f", file, "--if-match", strconv.FormatInt(after, 10))
	applied := revisionIn(t, out)
	if applied <= after {
		t.Fatalf("apply printed revision %d, want above %d:\n%s", applied, after, out)
	}

	_, errOut, code = runCtl(t, "", "ctl", "--admin", admin, "delete", "g", "--if-match", strconv.FormatInt(after, 10))
	if code != 1 || !strings.Contains(errOut, "revision "+strconv.FormatInt(applied, 10)) {
		t.Fatalf("stale delete --if-match: exit %d: %s", code, errOut)
	}
	mustCtl(t, admin, "delete", "g", "--if-match", strconv.FormatInt(applied, 10))
	if _, err := b.Group("g"); err == nil {
		t.Fatal("group still there after delete --if-match at its revision")
	}

	_, errOut, code = runCtl(t, "", "ctl", "--admin", admin, "delete", "g", "--if-match", "-1")
	if code != 2 || !strings.Contains(errOut, "--if-match") {
		t.Fatalf("negative --if-match: exit %d: %s", code, errOut)
	}
}
