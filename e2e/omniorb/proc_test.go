//go:build linux

package omniorb

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// jsonLines decodes the lines of s that are JSON objects into values of T
// chosen by keep.
func jsonLines[T any](t *testing.T, s string, keep func(line string) bool) []T {
	t.Helper()
	var out []T
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") || !keep(line) {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("decoding %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// testContext returns a context ending after d or when the test ends.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// needCI skips the test for a missing dependency, or fails it when
// CI=true.
func needCI(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (required with CI=true; scripts/test.sh installs it)", msg)
	}
	t.Skipf("%s; scripts/test.sh installs it", msg)
}
