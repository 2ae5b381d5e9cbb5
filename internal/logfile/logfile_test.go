package logfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/logfile"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("%s ends in a partial line: %q", path, b)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestReopenAfterRename: lines before Reopen stay in the renamed file,
// lines after it go to a new file at the path.
func TestReopenAfterRename(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	f, err := logfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, "one")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "two") // still the renamed file
	if err := f.Reopen(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "three")
	if got := strings.Join(readLines(t, path+".1"), ","); got != "one,two" {
		t.Errorf("rotated file: %q, want one,two", got)
	}
	if got := strings.Join(readLines(t, path), ","); got != "three" {
		t.Errorf("new file: %q, want three", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != logfile.Mode&^umask(t) {
		t.Errorf("new file: %v, %v; want mode %v", fi.Mode(), err, os.FileMode(logfile.Mode&^umask(t)))
	}
}

// umask reads the process umask from /proc (Linux) without changing it.
func umask(t *testing.T) os.FileMode {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("no /proc/self/status: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			var m uint32
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%o", &m); err != nil {
				t.Fatal(err)
			}
			return os.FileMode(m)
		}
	}
	t.Fatal("no Umask in /proc/self/status")
	return 0
}

// TestReopenUnderConcurrentWrites: writers racing with rename and Reopen
// lose no line and split none.
func TestReopenUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	f, err := logfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, lines, rotations = 4, 500, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				if _, err := fmt.Fprintf(f, "w%d-%d %s\n", w, i, strings.Repeat("x", 100)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for r := range rotations {
		if err := os.Rename(path, fmt.Sprintf("%s.%d", path, r)); err != nil {
			t.Fatal(err)
		}
		if err := f.Reopen(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for r := range rotations {
		for _, l := range readLines(t, fmt.Sprintf("%s.%d", path, r)) {
			seen[l]++
		}
	}
	for _, l := range readLines(t, path) {
		seen[l]++
	}
	for w := range writers {
		for i := range lines {
			l := fmt.Sprintf("w%d-%d %s", w, i, strings.Repeat("x", 100))
			if seen[l] != 1 {
				t.Fatalf("line w%d-%d found %d times, want once", w, i, seen[l])
			}
			delete(seen, l)
		}
	}
	if len(seen) != 0 {
		t.Errorf("%d lines that no writer wrote (split or mixed lines)", len(seen))
	}
}

// TestReopenFailureKeepsTheOldFile: when the path cannot be opened, lines
// keep going to the file already open.
func TestReopenFailureKeepsTheOldFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "logs")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sub, "access.log")
	f, err := logfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	moved := filepath.Join(dir, "moved")
	if err := os.Rename(sub, moved); err != nil { // the directory is gone
		t.Fatal(err)
	}
	if err := f.Reopen(); err == nil || !strings.HasPrefix(err.Error(), "logfile: ") {
		t.Fatalf("Reopen with the directory gone: %v, want a logfile: error", err)
	}
	fmt.Fprintln(f, "kept")
	if got := strings.Join(readLines(t, filepath.Join(moved, "access.log")), ","); got != "kept" {
		t.Errorf("old file: %q, want kept", got)
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	f, err := logfile.Open(filepath.Join(t.TempDir(), "a.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x\n")); !errors.Is(err, logfile.ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := f.Reopen(); !errors.Is(err, logfile.ErrClosed) {
		t.Errorf("Reopen after Close: %v, want ErrClosed", err)
	}
}

func TestOpenError(t *testing.T) {
	t.Parallel()
	_, err := logfile.Open(filepath.Join(t.TempDir(), "missing", "a.log"))
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "logfile: ") {
		t.Errorf("Open in a missing directory: %v, want a logfile: error wrapping ErrNotExist", err)
	}
}
