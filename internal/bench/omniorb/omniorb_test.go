package omniorb

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// needPrograms builds the programs into a cache under the test's
// temporary directory; it skips the test when the toolchain is missing
// (fails it with CI=true).
func needPrograms(t *testing.T, cache string) *Programs {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := Cached(ctx, cache)
	if me := (*MissingError)(nil); errors.As(err, &me) {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBuildAndCall builds the programs, starts the server and calls it
// with the client: closed loop with --latencies, then at a rate from a
// --start-at time with --per-call lines. A second Cached reuses the build.
func TestBuildAndCall(t *testing.T) {
	cache := t.TempDir()
	p := needPrograms(t, cache)
	before, err := os.Stat(p.Client)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Cached(context.Background(), cache)
	if err != nil || again.Client != p.Client {
		t.Fatalf("second Cached: %+v, %v; want the build in %s", again, err, p.Dir)
	}
	if after, _ := os.Stat(p.Client); !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("second Cached rebuilt the client")
	}

	srv := exec.Command(p.Server)
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "IOR:") {
		t.Fatalf("server's first line %q, want its IOR", sc.Text())
	}
	ior := sc.Text()

	raw, err := exec.Command(p.Client, "--calls", "5", "--latencies", ior).Output()
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	var sum struct {
		OK        int     `json:"ok"`
		Latencies []int64 `json:"latencies_us"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatalf("summary %q: %v", raw, err)
	}
	if sum.OK != 5 || len(sum.Latencies) != 5 {
		t.Fatalf("summary %s: want 5 calls and 5 latencies", raw)
	}

	startAt := time.Now().Add(300 * time.Millisecond)
	t0 := time.Now()
	raw, err = exec.Command(p.Client, "--calls", "4", "--rate", "20", "--per-call",
		"--start-at", strconv.FormatInt(startAt.UnixMicro(), 10), ior).Output()
	if err != nil {
		t.Fatalf("paced client: %v", err)
	}
	// 4 calls 50 ms apart from startAt: the last is sent at startAt+150ms.
	if d := time.Since(t0); d < startAt.Sub(t0)+150*time.Millisecond {
		t.Errorf("paced client took %s, want at least its start plus 150ms", d)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 5 {
		t.Fatalf("paced client wrote %d lines, want 4 calls and a summary:\n%s", len(lines), raw)
	}
	for _, l := range lines[:4] {
		var c struct {
			OK   bool   `json:"ok"`
			Late *int64 `json:"late_us"`
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil || !c.OK || c.Late == nil || *c.Late < 0 {
			t.Errorf("call line %q: want ok and late_us ≥ 0 (%v)", l, err)
		}
	}

	if err := exec.Command(p.Client, "--start-at", "yesterday", ior).Run(); err == nil {
		t.Errorf("--start-at yesterday accepted")
	} else if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("--start-at yesterday: %v, want exit status 2", err)
	}
}

func TestMissingErrorNamesPackages(t *testing.T) {
	err := &MissingError{What: "omniidl", Packages: "omniidl", Err: os.ErrNotExist}
	if s := err.Error(); !strings.Contains(s, "apt-get install") || !strings.Contains(s, "omniidl") {
		t.Errorf("%q: want the Debian packages named", s)
	}
}
