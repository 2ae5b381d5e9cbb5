// Package etcdtest runs real etcd processes for tests: one member, or a
// cluster of several on loopback, each on free ports below the ephemeral
// range and a data directory of its own. It waits for readiness by etcd's
// own health endpoint, stops every member at cleanup (kill and wait), and
// can stop, start, kill -9, pause (SIGSTOP) and resume a member, for tests
// of what happens when etcd fails.
//
// The binary is Debian's etcd-server (3.4), found on PATH or as
// /usr/bin/etcd; scripts/test.sh installs it. When it is missing, Need
// fails the test with CI=true and skips it otherwise.
//
//	func TestMain(m *testing.M) {
//		c, err := etcdtest.Start(etcdtest.Options{})
//		...
//		code := m.Run()
//		c.Close()
//		os.Exit(code)
//	}
package etcdtest
