package store

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
)

func openT(t *testing.T, dir string) Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func get(t *testing.T, s Store, bucket, key string) ([]byte, error) {
	t.Helper()
	var out []byte
	err := s.View(func(tx Tx) error {
		v, err := tx.Get(bucket, key)
		out = append([]byte(nil), v...)
		return err
	})
	return out, err
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s := openT(t, t.TempDir())
	err := s.Update(func(tx Tx) error {
		if err := tx.Put("groups", "prime", []byte(`{"name":"prime"}`)); err != nil {
			return err
		}
		return tx.Put("groups", "empty", nil)
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	v, err := get(t, s, "groups", "prime")
	if err != nil || string(v) != `{"name":"prime"}` {
		t.Fatalf("Get = %q, %v", v, err)
	}
	v, err = get(t, s, "groups", "empty")
	if err != nil || len(v) != 0 {
		t.Fatalf("Get empty value = %q, %v; want empty, nil", v, err)
	}
	if _, err := get(t, s, "groups", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get missing key: %v, want ErrNotFound", err)
	}
	if err := s.Update(func(tx Tx) error {
		if err := tx.Delete("groups", "prime"); err != nil {
			return err
		}
		return tx.Delete("groups", "never-there")
	}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := get(t, s, "groups", "prime"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get deleted key: %v, want ErrNotFound", err)
	}
}

func TestPutCopiesValue(t *testing.T) {
	t.Parallel()
	s := openT(t, t.TempDir())
	buf := []byte("first")
	if err := s.Update(func(tx Tx) error {
		err := tx.Put("b", "k", buf)
		copy(buf, "XXXXX")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if v, _ := get(t, s, "b", "k"); string(v) != "first" {
		t.Fatalf("value = %q, want %q: Put must not keep the caller's buffer", v, "first")
	}
}

func TestListOrder(t *testing.T) {
	t.Parallel()
	s := openT(t, t.TempDir())
	keys := []string{"r-09", "r-01", "b", "r-10", "a", "r-1", ""}
	if err := s.Update(func(tx Tx) error {
		for _, k := range keys {
			if k == "" {
				continue
			}
			if err := tx.Put("replicas", k, []byte("v"+k)); err != nil {
				return err
			}
		}
		return tx.Put("replicas", "empty", []byte{})
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := s.View(func(tx Tx) error {
		return tx.List("replicas", func(k string, v []byte) error {
			if k != "empty" && string(v) != "v"+k {
				return fmt.Errorf("value of %s = %q", k, v)
			}
			got = append(got, k)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	want := "a b empty r-01 r-09 r-1 r-10"
	if strings.Join(got, " ") != want {
		t.Fatalf("List order = %q, want %q", strings.Join(got, " "), want)
	}

	// An error from fn stops the walk and comes back unchanged.
	stop := errors.New("stop")
	n := 0
	err := s.View(func(tx Tx) error {
		return tx.List("replicas", func(string, []byte) error {
			n++
			return stop
		})
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("List with failing fn: err %v after %d calls, want stop after 1", err, n)
	}
}

func TestMissingBucket(t *testing.T) {
	t.Parallel()
	s := openT(t, t.TempDir())
	err := s.View(func(tx Tx) error {
		if _, err := tx.Get("nope", "k"); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("Get: %v, want ErrNotFound", err)
		}
		return tx.List("nope", func(k string, _ []byte) error {
			return fmt.Errorf("List of a missing bucket called fn with %q", k)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(tx Tx) error { return tx.Delete("nope", "k") }); err != nil {
		t.Fatalf("Delete in a missing bucket: %v", err)
	}
}

func TestRollbackOnError(t *testing.T) {
	t.Parallel()
	s := openT(t, t.TempDir())
	if err := s.Update(func(tx Tx) error { return tx.Put("b", "keep", []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := s.Update(func(tx Tx) error {
		if err := tx.Put("b", "new", []byte("2")); err != nil {
			return err
		}
		if err := tx.Put("other", "x", []byte("3")); err != nil {
			return err
		}
		if err := tx.Delete("b", "keep"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want the function's error", err)
	}
	if v, err := get(t, s, "b", "keep"); err != nil || string(v) != "1" {
		t.Fatalf("deleted key after rollback: %q, %v", v, err)
	}
	if _, err := get(t, s, "b", "new"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("put key after rollback: %v, want ErrNotFound", err)
	}
	if _, err := get(t, s, "other", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("new bucket after rollback: %v, want ErrNotFound", err)
	}
}

func TestBadKeys(t *testing.T) {
	t.Parallel()
	s := openT(t, t.TempDir())
	for _, tc := range []struct{ name, bucket, key string }{
		{"empty bucket", "", "k"},
		{"empty key", "b", ""},
	} {
		err := s.Update(func(tx Tx) error { return tx.Put(tc.bucket, tc.key, []byte("v")) })
		if err == nil || !strings.HasPrefix(err.Error(), "store: ") {
			t.Errorf("%s: Put = %v, want a store: error", tc.name, err)
		}
	}
	err := s.View(func(tx Tx) error { return tx.Put("b", "k", []byte("v")) })
	if err == nil {
		t.Error("Put in a read-only transaction succeeded")
	}
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(tx Tx) error { return tx.Put("groups", "prime", []byte("p")) }); err != nil {
		t.Fatal(err)
	}
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
	if v, err := get(t, s, "groups", "prime"); err != nil || string(v) != "p" {
		t.Fatalf("after reopen: %q, %v", v, err)
	}
}

func TestInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	openT(t, dir)
	// bbolt locks the file with flock, which is per open file, so a second
	// open from this process waits like another process would.
	_, err := open(dir, 50*time.Millisecond)
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

// TestMain runs the writer child when asked to, before any test.
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
		err := s.Update(func(tx Tx) error {
			return tx.Put("kill", fmt.Sprintf("%08d", i), []byte(strings.Repeat("v", i%500)))
		})
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
	var n int
	err = s.View(func(tx Tx) error {
		return tx.List("kill", func(k string, v []byte) error {
			if want := fmt.Sprintf("%08d", n); k != want {
				return fmt.Errorf("key %d is %q, want %q", n, k, want)
			}
			if len(v) != n%500 {
				return fmt.Errorf("key %s has a %d-byte value, want %d", k, len(v), n%500)
			}
			n++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n <= last {
		t.Fatalf("found %d keys after kill -9, want at least the %d acknowledged", n, last+1)
	}
	// The file itself must be consistent, not just readable.
	bs := s.(*boltStore)
	if err := bs.db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}); err != nil {
		t.Fatalf("consistency check after kill -9: %v", err)
	}
}
