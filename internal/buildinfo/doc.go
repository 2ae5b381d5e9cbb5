// Package buildinfo names the build of the running binary: its version,
// the commit it was built from (with "+dirty" when the tree had changes),
// that commit's time, and the Go version that built it. "fulcrum version",
// "fulcrum --version" and the admin API's /healthz all report the one Info
// that Read returns, so they cannot disagree.
//
// Go records the commit and its time (the vcs.* settings of
// runtime/debug.BuildInfo) when it builds from a version-controlled tree
// with -buildvcs on; it records no build date, and Info has none.
//
//	info := buildinfo.Read(cli.Version)
//	fmt.Print(info.Text("fulcrum"))
package buildinfo
