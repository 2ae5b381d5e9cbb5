package failpointbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// repoRoot is the module root (this package is internal/failpoint/failpointbuild).
const repoRoot = "../../.."

// counterFailpoints are the failpoints of seed 001's point (1).
var counterFailpoints = map[string]string{
	"counterHTTPBeforeReply": "internal/backend/counter_http.go",
	"counterGIOPBeforeReply": "internal/backend/countergiop.go",
}

// TestScanCheckout holds the module's own markers to the convention (a
// marker that would break the failpoint build fails here, in every test
// run, without building) and finds seed 001's point (1).
func TestScanCheckout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ms, err := Scan(ctx, repoRoot)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	found := map[string]Marker{}
	for _, m := range ms {
		found[m.Name] = m
	}
	for name, file := range counterFailpoints {
		m, ok := found[name]
		if !ok {
			t.Errorf("no failpoint %s; found %v", name, ms)
			continue
		}
		if m.File != file || !m.Kill {
			t.Errorf("failpoint %s = %+v, want a Kill in %s", name, m, file)
		}
	}
}

// TestPrepareLeavesCheckoutUntouched rewrites a copy and checks that the
// checkout is byte for byte what it was, while the copy has the
// failpoints' code and bindings.
func TestPrepareLeavesCheckoutUntouched(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := listPackages(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{root}
	for _, p := range pkgs {
		dirs = append(dirs, p.Dir)
	}
	before := snapshot(t, dirs)
	dst := t.TempDir()
	ms, err := prepare(root, dst, pkgs)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	after := snapshot(t, dirs)
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s changed in the checkout", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared in the checkout", p)
		}
	}
	if len(ms) < len(counterFailpoints) {
		t.Errorf("prepare found %v, want at least %d failpoints", ms, len(counterFailpoints))
	}
	for name, file := range counterFailpoints {
		orig, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		copied, err := os.ReadFile(filepath.Join(dst, file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(copied, []byte("__fp_"+name+".Acquire()")) {
			t.Errorf("the copy of %s lacks the code of %s", file, name)
		}
		if a, b := bytes.Count(orig, []byte("\n")), bytes.Count(copied, []byte("\n")); a != b {
			t.Errorf("the copy of %s has %d lines, the checkout %d", file, b, a)
		}
		binding, err := os.ReadFile(filepath.Join(dst, filepath.Dir(file), BindingFile))
		if err != nil {
			t.Fatalf("no binding: %v", err)
		}
		if !strings.Contains(string(binding), `runtime.NewFailpoint("`+name+`")`) {
			t.Errorf("the binding of %s lacks %s:\n%s", filepath.Dir(file), name, binding)
		}
	}
	for _, f := range []string{"go.mod", "go.sum", "cmd/fulcrum/main.go", "internal/failpoint/kill.go"} {
		if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
			t.Errorf("the copy lacks %s: %v", f, err)
		}
	}
}

// snapshot hashes the regular files directly in dirs (the module root
// and the directories of the packages copied: where gofail run in place
// would write its rewritten files, .tmp files and bindings).
func snapshot(t *testing.T, dirs []string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			path := filepath.Join(dir, e.Name())
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out[path] = sha256.Sum256(b)
		}
	}
	return out
}
