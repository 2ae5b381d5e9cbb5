// Package failpointbuild builds fulcrum's failpoint binary: ./cmd/fulcrum
// with the gofail markers of package failpoint turned into code. The
// release build (go build ./cmd/fulcrum) has none; only this one does.
//
// gofail rewrites sources in place, so Build never runs it on the
// checkout: it copies the sources ./cmd/fulcrum is built from (the Go,
// assembly, C and embedded files of the module's packages, go.mod and
// go.sum) into a temporary directory, rewrites the copies there (gofail's
// own rewriter, go.etcd.io/gofail/code, pinned in go.mod), adds the
// runtime bindings, builds, and removes the directory. The checkout is
// only read, and stays gofmt-clean. The directory's path is the same for
// every build of a checkout, so that the build cache serves the packages
// the rewrite did not change (see workDir).
//
//	if err := failpointbuild.Build(ctx, repoRoot, "/tmp/fulcrum-failpoint"); err != nil {
//		return err
//	}
//
// By hand: go run ./internal/failpoint/cmd/failpointbuild -o PATH.
// Tests use package failpoint/failpointtest, which builds once per test
// process.
package failpointbuild
