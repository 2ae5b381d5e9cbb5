//go:build linux

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// The files of packaging/ and the paths they agree on.
const (
	unitFile     = "../packaging/fulcrum.service"
	sysusersFile = "../packaging/fulcrum.sysusers.conf"
	configFile   = "../packaging/fulcrum.yaml"
	unitBinary   = "/usr/local/bin/fulcrum"
	unitConfig   = "/etc/fulcrum/fulcrum.yaml"
	stateDir     = "/var/lib/fulcrum"
	logsDir      = "/var/log/fulcrum"
)

// maxExposure bounds the unit's exposure that "systemd-analyze security"
// computes, in its tenths (17 is 1.7, "OK"; 100 is 10.0, "UNSAFE").
const maxExposure = 20

// unitDirectives returns the unit's "Key=value" lines by key.
func unitDirectives(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	d := map[string][]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			d[k] = append(d[k], v)
		}
	}
	return d
}

// The systemd unit passes "systemd-analyze verify" without a word, and
// "systemd-analyze security" rates its hardening at most maxExposure. The
// unit is checked as shipped but for the binary of ExecStart and
// ExecReload, which is the one the tests built (verify requires it to
// exist).
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	analyze := needTool(t, "systemd-analyze")
	ctx := testContext(t, 60*time.Second)
	d := unitDirectives(t)
	for key, want := range map[string]string{
		"ExecStart":       unitBinary + " serve --config " + unitConfig,
		"ExecReload":      unitBinary + " serve --check --config " + unitConfig + " | /bin/kill -HUP $MAINPID",
		"User":            "fulcrum",
		"StateDirectory":  "fulcrum",
		"LogsDirectory":   "fulcrum",
		"NoNewPrivileges": "yes",
		"ProtectSystem":   "strict",
		"ProtectHome":     "yes",
		"PrivateTmp":      "yes",
	} {
		if got := strings.Join(d[key], " | "); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}
	if caps := strings.Join(d["CapabilityBoundingSet"], " "); caps != "" && caps != "CAP_NET_BIND_SERVICE" {
		t.Errorf("CapabilityBoundingSet=%s, want empty or CAP_NET_BIND_SERVICE", caps)
	}

	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "fulcrum.service")
	local := strings.ReplaceAll(string(b), "="+unitBinary+" ", "="+fulcrumBin+" ")
	if err := os.WriteFile(unit, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, analyze, "verify", "--man=no", unit)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("systemd-analyze verify: %v, want success and no output:\n%s", err, out)
	}

	cmd = exec.CommandContext(ctx, analyze, "security", "--offline=true", "--no-pager", "--threshold="+strconv.Itoa(maxExposure), unit)
	out, err = cmd.CombinedOutput()
	level := regexp.MustCompile(`Overall exposure level for fulcrum\.service: (\S+)`).FindSubmatch(out)
	if err != nil || level == nil {
		t.Fatalf("systemd-analyze security: %v (threshold %d tenths); its report:\n%s", err, maxExposure, out)
	}
	t.Logf("systemd-analyze security: exposure %s", level[1])
}

// The sysusers.d file creates the fulcrum user and group, with the unit's
// state directory as home and no login shell (in a scratch root).
func TestSysusersCreatesTheUser(t *testing.T) {
	t.Parallel()
	sysusers := needTool(t, "systemd-sysusers")
	ctx := testContext(t, 60*time.Second)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf, err := filepath.Abs(sysusersFile)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, sysusers, "--root="+root, conf).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	read := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(root, "etc", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	passwd, group := read("passwd"), read("group")
	if len(passwd) != 1 || len(group) != 1 {
		t.Fatalf("passwd %q, group %q: want the fulcrum user and group alone", passwd, group)
	}
	u, g := strings.Split(passwd[0], ":"), strings.Split(group[0], ":")
	if len(u) != 7 || u[0] != "fulcrum" || u[5] != stateDir || u[6] != "/usr/sbin/nologin" {
		t.Errorf("passwd entry %q, want fulcrum with home %s and shell /usr/sbin/nologin", passwd[0], stateDir)
	}
	if len(g) != 4 || g[0] != "fulcrum" || g[2] != u[3] {
		t.Errorf("group entry %q, want fulcrum with the user's gid %s", group[0], u[3])
	}
}

// packaging/fulcrum.yaml is a valid config whose paths are the unit's
// directories, and the unit's ExecReload check passes it.
func TestPackagedConfig(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 30*time.Second)
	if code, stdout, stderr := run(ctx, t, "fulcrum serve --check", "serve", "--check", "--config", configFile); code != 0 {
		t.Errorf("fulcrum serve --check --config %s: exit %d, want 0\n%s%s", configFile, code, stdout, stderr)
	}
	f, err := config.Load(configFile)
	if err != nil {
		t.Fatal(err)
	}
	if f.DataDir != stateDir || filepath.Dir(f.AccessLog) != logsDir || f.LogFormat != config.LogFormatJSON {
		t.Errorf("data_dir %q, access_log %q, log_format %q: want %s, a file in %s, json", f.DataDir, f.AccessLog, f.LogFormat, stateDir, logsDir)
	}
	if d := unitDirectives(t)["TimeoutStopSec"]; len(d) != 1 {
		t.Errorf("TimeoutStopSec=%v, want one", d)
	} else if stop, err := time.ParseDuration(d[0]); err != nil || stop <= f.ShutdownTimeout.D() {
		t.Errorf("TimeoutStopSec=%s (%v), want a duration longer than shutdown_timeout %v", d[0], err, f.ShutdownTimeout)
	}
}

// docs/install.md shows packaging/fulcrum.logrotate as it is, but for its
// comments.
func TestInstallDocShowsTheLogrotateFile(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("../packaging/fulcrum.logrotate")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(file)), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			want = append(want, line)
		}
	}
	start := strings.Index(string(doc), want[0]+"\n")
	if start < 0 {
		t.Fatalf("docs/install.md does not show %q", want[0])
	}
	shown, _, _ := strings.Cut(string(doc[start:]), "\n```")
	if shown != strings.Join(want, "\n") {
		t.Errorf("docs/install.md shows:\n%s\npackaging/fulcrum.logrotate has (comments left out):\n%s", shown, strings.Join(want, "\n"))
	}
}
