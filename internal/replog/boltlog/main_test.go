package boltlog

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(runChild(path))
	}
	goleak.VerifyTestMain(m)
}
