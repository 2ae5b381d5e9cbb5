//go:build !unix

package failpointbuild

import (
	"context"
	"fmt"
	"os"
)

// workDir returns a new temporary directory and the function that
// releases it (nothing to release: without flock each build has its own
// directory, and compiles the module's packages again).
func workDir(_ context.Context, _ string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "fulcrum-failpoint-")
	if err != nil {
		return "", nil, fmt.Errorf("failpointbuild: %w", err)
	}
	return dir, func() {}, nil
}
