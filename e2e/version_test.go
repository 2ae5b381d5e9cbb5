//go:build linux

package e2e

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	fbuild "github.com/fulcrum-lb/fulcrum/internal/buildinfo"
	"github.com/fulcrum-lb/fulcrum/internal/proctest"
)

// stampVar is the variable README's stamped build sets with -ldflags -X.
const stampVar = "github.com/fulcrum-lb/fulcrum/internal/cli.Version"

// TestVersionMatchesBuildInfoAndHealthz: "fulcrum version", "fulcrum
// --version" and a serving balancer's /healthz report what Go recorded in
// the binary (read back from the file with debug/buildinfo), for the
// binary the tests use and for one stamped as README says. When Go
// recorded the commit, it is the checkout's HEAD.
func TestVersionMatchesBuildInfoAndHealthz(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 3*time.Minute)
	stamped := buildStamped(ctx, t, "v0.0.0-e2e.1")
	for _, tc := range []struct {
		name, bin, stamp string
	}{
		{"unstamped", fulcrumBin, ""},
		{"stamped", stamped, "v0.0.0-e2e.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bi, err := buildinfo.ReadFile(tc.bin)
			if err != nil {
				t.Fatal(err)
			}
			want := fbuild.From(tc.stamp, bi)
			if tc.stamp != "" && want.Version != tc.stamp {
				t.Errorf("stamped build: version %q, want %q", want.Version, tc.stamp)
			}
			if want.GoVersion == "" || want.GoVersion != bi.GoVersion {
				t.Errorf("go version %q, the binary records %q", want.GoVersion, bi.GoVersion)
			}
			checkCommitIsHead(ctx, t, want)
			for _, args := range [][]string{{"version"}, {"--version"}} {
				p := proctest.Start(t, "fulcrum "+args[0], proctest.Options{}, tc.bin, args...)
				if code := p.Exit(ctx, t); code != 0 {
					t.Fatalf("fulcrum %s: exit status %d; stderr:\n%s", args[0], code, p.Stderr.String())
				}
				if got := p.Stdout.String(); got != want.Text("fulcrum") {
					t.Errorf("fulcrum %s printed:\n%s\nwant (from the binary's build information):\n%s", args[0], got, want.Text("fulcrum"))
				}
			}

			p := proctest.Start(t, "fulcrum serve", proctest.Options{}, tc.bin, "serve", "--admin", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data"))
			admin := p.WaitOutput(ctx, t, p.Stderr, servingLine)[1]
			res, err := apiClient(t).Get(admin + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body map[string]string
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("/healthz: %d, %v", res.StatusCode, err)
			}
			wantBody := map[string]string{"status": "ok", "version": want.Version, "go_version": want.GoVersion}
			if want.Commit != "" {
				wantBody["commit"] = want.Commit
				wantBody["commit_time"] = want.CommitTime
			}
			if fmt.Sprint(body) != fmt.Sprint(wantBody) {
				t.Errorf("/healthz = %v, want %v", body, wantBody)
			}
		})
	}
}

// buildStamped builds fulcrum with its version stamped at link time, as
// README's install section does, and with -buildvcs=auto so that Go records
// the commit when the checkout is a plain git clone (a git worktree, whose
// .git is a file, gets none: Go looks for a .git directory).
func buildStamped(ctx context.Context, t *testing.T, version string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fulcrum-stamped")
	args := []string{"build", "-buildvcs=auto", "-ldflags", "-X " + stampVar + "=" + version, "-o", bin}
	if os.Getenv("FULCRUM_E2E_RACE") == "1" {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/fulcrum")
	build := exec.CommandContext(ctx, "go", args...)
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// checkCommitIsHead checks a recorded commit against git: the revision is
// HEAD's, the time HEAD's commit time, and "+dirty" is there exactly when
// git status lists a change.
func checkCommitIsHead(ctx context.Context, t *testing.T, info fbuild.Info) {
	t.Helper()
	if info.Commit == "" {
		if info.CommitTime != "" {
			t.Errorf("commit time %q without a commit", info.CommitTime)
		}
		t.Logf("no VCS information in the binary (built with -buildvcs=false, or from a git worktree): commit not compared with git")
		return
	}
	git := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = ".."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	head := git("rev-parse", "HEAD")
	dirty := git("status", "--porcelain") != ""
	want := head
	if dirty {
		want += fbuild.DirtySuffix
	}
	if info.Commit != want {
		t.Errorf("commit %q, want %q (HEAD, dirty=%v)", info.Commit, want, dirty)
	}
	secs, err := strconv.ParseInt(git("log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if w := time.Unix(secs, 0).UTC().Format(time.RFC3339); info.CommitTime != w {
		t.Errorf("commit time %q, want HEAD's %q", info.CommitTime, w)
	}
}

// README and docs/install.md stamp the version through the variable the
// test above stamps.
func TestDocsStampTheVersionVariable(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"../README.md", "../docs/install.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `go build -ldflags "-X `+stampVar+`=`) {
			t.Errorf("%s does not show go build -ldflags \"-X %s=…\"", doc, stampVar)
		}
	}
}
