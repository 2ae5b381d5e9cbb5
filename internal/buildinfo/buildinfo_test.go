package buildinfo_test

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/buildinfo"
)

func vcs(rev, time, modified string) []debug.BuildSetting {
	return []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: rev},
		{Key: "vcs.time", Value: time},
		{Key: "vcs.modified", Value: modified},
	}
}

func TestFrom(t *testing.T) {
	t.Parallel()
	const rev = "fbafc1a3fe6a40132e7e17b51036b2d38fb4dcec"
	const when = "2026-11-27T05:12:13Z"
	tests := []struct {
		name    string
		stamped string
		bi      *debug.BuildInfo
		want    buildinfo.Info
	}{
		{"no build information", "", nil, buildinfo.Info{Version: "dev"}},
		{"stamped without build information", "v1.2.3", nil, buildinfo.Info{Version: "v1.2.3"}},
		{"stamped version wins over the module's", "v1.2.3",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.9.0"}, Settings: vcs(rev, when, "false")},
			buildinfo.Info{Version: "v1.2.3", Commit: rev, CommitTime: when, GoVersion: "go1.26.8"}},
		{"module version when not stamped", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.9.0"}},
			buildinfo.Info{Version: "v0.9.0", GoVersion: "go1.26.8"}},
		{"devel module is dev", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, when, "false")},
			buildinfo.Info{Version: "dev", Commit: rev, CommitTime: when, GoVersion: "go1.26.8"}},
		{"modified tree is dirty", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261127051213-fbafc1a3fe6a+dirty"}, Settings: vcs(rev, when, "true")},
			buildinfo.Info{Version: "v0.0.0-20261127051213-fbafc1a3fe6a+dirty", Commit: rev + "+dirty", CommitTime: when, GoVersion: "go1.26.8"}},
		{"no vcs settings", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}}},
			buildinfo.Info{Version: "dev", GoVersion: "go1.26.8"}},
		{"modified without a revision adds nothing", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}},
			buildinfo.Info{Version: "dev", GoVersion: "go1.26.8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := buildinfo.From(tc.stamped, tc.bi); got != tc.want {
				t.Errorf("From(%q, …) = %+v, want %+v", tc.stamped, got, tc.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		info buildinfo.Info
		want string
	}{
		{"known", buildinfo.Info{Version: "v1.2.3", Commit: "abc+dirty", CommitTime: "2026-11-27T05:12:13Z", GoVersion: "go1.26.8"},
			"fulcrum v1.2.3\ncommit: abc+dirty\ncommit time: 2026-11-27T05:12:13Z\ngo: go1.26.8\n"},
		{"unknown", buildinfo.Info{Version: "dev"},
			"fulcrum dev\ncommit: unknown\ncommit time: unknown\ngo: unknown\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.info.Text("fulcrum"); got != tc.want {
				t.Errorf("Text:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestRead: the running binary's Info is what runtime/debug reports.
func TestRead(t *testing.T) {
	t.Parallel()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("a test binary has build information")
	}
	got := buildinfo.Read("v7.7.7")
	if got != buildinfo.From("v7.7.7", bi) {
		t.Errorf("Read = %+v, From(ReadBuildInfo) = %+v", got, buildinfo.From("v7.7.7", bi))
	}
	if got.GoVersion != runtime.Version() || got.Version != "v7.7.7" {
		t.Errorf("Read = %+v, want version v7.7.7 and Go %s", got, runtime.Version())
	}
}
