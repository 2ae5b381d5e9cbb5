package buildinfo

import (
	"runtime/debug"
	"strings"
)

// DevVersion is the version of a build that was given none: neither by
// the linker (-X) nor by the module version Go recorded.
const DevVersion = "dev"

// DirtySuffix ends Commit when the tree the binary was built from had
// uncommitted changes (vcs.modified).
const DirtySuffix = "+dirty"

// Info identifies a build. Empty fields are unknown: Commit and CommitTime
// are empty for a build without VCS information (go build -buildvcs=false,
// a tree outside version control, a test binary).
type Info struct {
	// Version is the version stamped at link time, else the main module's
	// version as Go recorded it (go install module@v1.2.3, or a
	// pseudo-version Go derived from the VCS), else DevVersion.
	Version string `json:"version,omitempty"`
	// Commit is the VCS revision (vcs.revision), followed by DirtySuffix
	// when vcs.modified is true.
	Commit string `json:"commit,omitempty"`
	// CommitTime is the commit's time as Go recorded it (vcs.time, RFC
	// 3339 in UTC).
	CommitTime string `json:"commit_time,omitempty"`
	// GoVersion is the Go toolchain that built the binary, like "go1.26.8".
	GoVersion string `json:"go_version,omitempty"`
}

// Read returns the running binary's Info. stamped is the version set at
// link time ("" when none was).
func Read(stamped string) Info {
	bi, _ := debug.ReadBuildInfo()
	return From(stamped, bi)
}

// From derives an Info from the version stamped at link time ("" when
// none) and the binary's build information (nil when unavailable). It is
// pure: Read feeds it runtime/debug.ReadBuildInfo.
func From(stamped string, bi *debug.BuildInfo) Info {
	info := Info{Version: stamped}
	if bi == nil {
		if info.Version == "" {
			info.Version = DevVersion
		}
		return info
	}
	if info.Version == "" {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
		} else {
			info.Version = DevVersion
		}
	}
	info.GoVersion = bi.GoVersion
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.time":
			info.CommitTime = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && info.Commit != "" {
		info.Commit += DirtySuffix
	}
	return info
}

// Text is Info as "fulcrum version" prints it: the program name and the
// version on the first line, then one "key: value" line for the commit, the
// commit time and the Go version; an unknown value reads "unknown".
func (i Info) Text(program string) string {
	var b strings.Builder
	b.WriteString(program + " " + i.Version + "\n")
	line := func(key, v string) {
		if v == "" {
			v = "unknown"
		}
		b.WriteString(key + ": " + v + "\n")
	}
	line("commit", i.Commit)
	line("commit time", i.CommitTime)
	line("go", i.GoVersion)
	return b.String()
}
