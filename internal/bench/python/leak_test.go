package python

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine started by a test outlives it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
