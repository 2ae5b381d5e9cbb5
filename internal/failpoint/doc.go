// Package failpoint is fulcrum's fault injection: failpoints placed in the
// source as gofail (go.etcd.io/gofail) comments, which only a failpoint
// build (package failpointbuild) turns into code. The checkout and the
// release binary have no failpoints: the markers are comments there.
//
// A failpoint is two comment lines directly above the statement it
// precedes, the second calling Kill:
//
//	// gofail: var counterHTTPBeforeReply struct{}
//	// failpoint.Kill()
//	writeJSON(w, http.StatusOK, map[string]int64{"value": st.Value})
//
// The name (counterHTTPBeforeReply) is unique in the whole module and
// names where the process dies. The type is always struct{}. The line
// after the block must be code or blank: gofail takes every comment line
// right after the header for code. A file with markers does not import
// this package: the failpoint build adds the import to the rewritten copy.
//
// A failpoint binary runs its failpoints only when told to, by the
// environment at start-up (gofail's terms; ";" separates failpoints):
//
//	GOFAIL_FAILPOINTS='counterHTTPBeforeReply=return' fulcrum backend counter ...
//	GOFAIL_FAILPOINTS='counterHTTPBeforeReply=249*off->return' ...  # the 250th time
//
// or at run time through gofail's HTTP endpoint (GOFAIL_HTTP=127.0.0.1:PORT,
// then PUT /<name> with the terms as the body, DELETE /<name> to clear).
// Failpoints kill with SIGKILL rather than panic: net/http recovers a
// handler's panic, and a crash must run no deferred code.
package failpoint
