package etcdtest

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main runs a package's tests, from its TestMain, with one single-member
// etcd started for all of them and put in *shared (nil when etcd is not
// installed: tests calling Need then fail with CI=true and skip otherwise).
// It stops the member after the tests, and fails a passing run that
// leaked goroutines.
func Main(m *testing.M, shared **Cluster) {
	c, err := Start(Options{})
	if err != nil && !errors.Is(err, ErrNoBinary) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*shared = c
	code := m.Run()
	if c != nil {
		c.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
