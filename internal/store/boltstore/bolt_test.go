package boltstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"

	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store {
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		},
		Compact: func(t *testing.T, s store.Store, rev int64) { s.(*Store).Compact(rev) },
	})
}

func openT(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, s store.Store, key, value string) int64 {
	t.Helper()
	_, rev, _, err := s.Txn(ctxT(t), nil, []store.Op{store.Put(key, []byte(value))})
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rev := put(t, s, "groups/prime", "p")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("data directory mode %o, want 700", perm)
	}
	s = openT(t, dir)
	if kv, err := s.Get(ctxT(t), "groups/prime"); err != nil || string(kv.Value) != "p" || kv.ModRev != rev || kv.CreateRev != rev {
		t.Fatalf("after reopen: %+v, %v; want p at revision %d", kv, err, rev)
	}
	// The revision counter survives: the next change is the next revision.
	if next := put(t, s, "groups/other", "o"); next != rev+1 {
		t.Fatalf("first revision after reopening = %d, want %d", next, rev+1)
	}
}

func TestInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	openT(t, dir)
	// bbolt locks the file with flock, which is per open file, so a second
	// open from this process waits like another process would.
	_, err := open(dir, 50*time.Millisecond, DefaultHistory)
	want := fmt.Sprintf("store: %s is in use by another fulcrum process", filepath.Join(dir, FileName))
	if err == nil || err.Error() != want || !errors.Is(err, ErrInUse) {
		t.Fatalf("second open = %v, want %q wrapping ErrInUse", err, want)
	}
}

func TestOpenNotADirectory(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(f); err == nil {
		t.Fatal("Open on a regular file succeeded")
	}
}

// childEnv, when set, makes the test binary act as the writer that
// TestSurvivesKill9 kills.
const childEnv = "FULCRUM_STORE_KILL_CHILD_DIR"

// TestMain runs the writer child when asked to, before any test, and
// otherwise fails the run if a goroutine started by a test (a watch)
// outlives it.
func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		killChild(dir)
		return
	}
	goleak.VerifyTestMain(m)
}

// killChild commits one key per transaction, forever, printing the index
// of each committed key, until it is killed (or its stdin closes).
func killChild(dir string) {
	s, err := Open(dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	go func() {
		// The parent never writes; EOF means it is gone.
		os.Stdin.Read(make([]byte, 1))
		os.Exit(0)
	}()
	for i := 0; ; i++ {
		_, _, _, err := s.Txn(context.Background(), nil, []store.Op{store.Put(fmt.Sprintf("kill/%08d", i), []byte(strings.Repeat("v", i%500)))})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(i)
	}
}

func TestSurvivesKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	// Read committed indexes until enough are durable, then kill -9 the
	// writer in the middle of its next transactions.
	const enough = 200
	committed := make(chan int)
	go func() {
		defer close(committed)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			i, err := strconv.Atoi(sc.Text())
			if err != nil {
				t.Errorf("child: %s", sc.Text())
				return
			}
			select {
			case committed <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	last := -1
	for last < enough {
		select {
		case i, ok := <-committed:
			if !ok {
				t.Fatalf("child exited after committing %d keys", last+1)
			}
			last = i
		case <-ctx.Done():
			t.Fatalf("child committed only %d keys before the deadline", last+1)
		}
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // "signal: killed"; the reader goroutine ends at EOF
	for range committed {
	}

	s := openT(t, dir)
	kvs, rev, err := s.List(ctxT(t), "kill/")
	if err != nil {
		t.Fatal(err)
	}
	n := len(kvs)
	for i, kv := range kvs {
		if want := fmt.Sprintf("kill/%08d", i); kv.Key != want {
			t.Fatalf("key %d is %q, want %q", i, kv.Key, want)
		}
		if len(kv.Value) != i%500 {
			t.Fatalf("key %s has a %d-byte value, want %d", kv.Key, len(kv.Value), i%500)
		}
		if kv.ModRev != int64(i+1) || kv.CreateRev != int64(i+1) {
			t.Fatalf("key %s at revisions mod %d create %d, want %d: one revision per commit", kv.Key, kv.ModRev, kv.CreateRev, i+1)
		}
	}
	if rev != int64(n) {
		t.Fatalf("store revision %d after %d commits", rev, n)
	}
	if n <= last {
		t.Fatalf("found %d keys after kill -9, want at least the %d acknowledged", n, last+1)
	}
	// The file itself must be consistent, not just readable.
	if err := s.db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}); err != nil {
		t.Fatalf("consistency check after kill -9: %v", err)
	}
}
