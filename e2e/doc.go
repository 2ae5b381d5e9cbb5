// Package e2e holds fulcrum's end-to-end tests: they build the fulcrum
// binary once and drive real processes (fulcrum serve, fulcrum backend
// prime, fulcrum demo) over real sockets, with curl, wrk and the Go client
// library as clients.
//
// Run them with the rest of the tests (go test -race ./...) or alone:
//
//	go test -count=1 ./e2e/
//
// curl and wrk must be installed (scripts/test.sh installs them). Without
// them the tests that need them are skipped, except when the environment
// has CI=true, where a missing tool fails the test. FULCRUM_E2E_RACE=1
// builds the binary under test with -race as well.
//
// The cluster tests (cluster_*_test.go) run fulcrum serve processes
// on a three-member etcd cluster (Debian's etcd-server, as for the etcd
// store's tests).
//
// Every process a test starts runs in its own process group and is killed
// (with the whole group) when the test ends; a test fails if a process of
// one of its groups is still alive after that.
package e2e
