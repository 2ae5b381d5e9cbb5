package failpoint

import (
	"debug/buildinfo"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EnvVar is the environment variable a failpoint binary reads its armed
// failpoints from at start-up: NAME=TERMS[;NAME=TERMS]... (gofail's
// syntax). A release binary ignores it.
const EnvVar = "GOFAIL_FAILPOINTS"

// Always is the terms that fire a failpoint every time it is reached
// (with Kill: the first time).
const Always = "return"

// Nth returns the terms that fire a failpoint the nth time it is reached
// (n ≥ 1) and every time after: "(n-1)*off->return". A failpoint that
// kills thus kills on its nth pass.
func Nth(n int) string {
	if n <= 1 {
		return Always
	}
	return strconv.Itoa(n-1) + "*off->" + Always
}

// Env returns the environment entry arming the failpoints of terms (name
// → terms, e.g. {"counterHTTPBeforeReply": Nth(250)}), for a failpoint
// binary's exec.Cmd.Env. Names are sorted.
func Env(terms map[string]string) string {
	names := make([]string, 0, len(terms))
	for n := range terms {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + terms[n]
	}
	return EnvVar + "=" + strings.Join(parts, ";")
}

// gofailModule is gofail's module; a failpoint binary links its runtime,
// a release binary nothing of it.
const gofailModule = "go.etcd.io/gofail"

// CheckBinary returns nil when the executable at path is a failpoint
// binary, and otherwise an error saying how to build one (what a command
// taking --failpoint-binary checks before relying on failpoints).
func CheckBinary(path string) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("failpoint: %s: not a Go executable with build information: %w", path, err)
	}
	for _, d := range info.Deps {
		if d.Path == gofailModule {
			return nil
		}
	}
	return fmt.Errorf("failpoint: %s has no failpoints (it does not link %s): build one with go run ./internal/failpoint/cmd/failpointbuild -o PATH", path, gofailModule)
}
