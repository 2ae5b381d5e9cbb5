// Package omniorb tests fulcrum with real CORBA ORBs: omniORB 4.2 (C++,
// Debian's libomniorb4-dev and omniidl) and omniORBpy 4.3 (PyPI's
// jeteve-omniorb). Its tests build the Prime server and client from the
// sources in internal/bench/omniorb/src (the ones "fulcrum bench --orb
// omniorb" embeds and builds; omniidl -bcxx, g++ -lomniORB4 -lomnithread; omniidl
// -bpython for the Python client) once per test run, start them as
// processes on the loopback interface and check what the unmodified
// clients see.
//
// Run them alone with
//
//	go test -count=1 ./e2e/omniorb/
//
// The tests build the fulcrum binary from the module, or use the one named
// by FULCRUM_BIN. scripts/test.sh installs the ORBs. TestOmniORBOverhead
// and TestOmniORBEffectiveness are measurements that run only with
// FULCRUM_OMNIORB_BENCH=1 (under flock /tmp/fulcrum-bench.lock);
// docs/giop-omniorb.md has the commands and recorded runs. Without them the tests are skipped,
// except when the environment has CI=true, where a missing tool fails the
// test.
//
// internal/bench/omniorb/src holds, besides the IDL:
//   - prime_server.cc: a POA server printing its IOR; --port binds
//     giop:tcp:127.0.0.1:PORT, --log-calls prints a JSON line per call
//     with its argument and the client connection it came on.
//   - prime_client.cc and prime_client.py: clients taking an IOR: or
//     corbaloc: reference, making N calls closed-loop or at a rate (or
//     batches read from stdin, or one call from each of K fresh ORBs) and
//     printing JSON lines: per call, and a summary with the COMM_FAILURE
//     and TRANSIENT counts. See the comments at their tops.
package omniorb
