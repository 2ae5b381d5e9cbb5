package boltlog

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// childEnv makes the re-executed test binary append to the log file it
// names, from childWriters goroutines (session "w<i>", seq 0, 1, ...),
// printing "acked <session> <seq> <position>" after each append returns,
// until it is killed.
const childEnv = "FULCRUM_BOLTLOG_CHILD"

const childWriters = 4

func runChild(path string) int {
	db, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := db.Group("g", GroupOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	for w := range childWriters {
		wg.Go(func() {
			s := fmt.Sprint("w", w)
			for seq := uint64(0); ; seq++ {
				pos, _, err := l.AppendOrGet(context.Background(), replog.Append{Session: s, Seq: seq, Payload: fmt.Appendf(nil, "%s-%d", s, seq), Origin: "child"})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				out.Lock()
				fmt.Printf("acked %s %d %d\n", s, seq, pos) // os.Stdout is unbuffered
				out.Unlock()
			}
		})
	}
	wg.Wait()
	return 0
}

// TestAckedSurvivesKill: every append a child process acknowledged before
// it was killed with SIGKILL is in the reopened file, at the position it
// was given, and its dedup key too.
func TestAckedSurvivesKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type ack struct {
		session string
		seq     uint64
		pos     uint64
	}
	var acks []ack
	sc := bufio.NewScanner(stdout)
	for len(acks) < 500 && sc.Scan() {
		var a ack
		if _, err := fmt.Sscanf(sc.Text(), "acked %s %d %d", &a.session, &a.seq, &a.pos); err != nil {
			t.Fatalf("child said %q: %v", sc.Text(), err)
		}
		acks = append(acks, a)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Acknowledgements already written before the kill count too.
	for sc.Scan() {
		var a ack
		if _, err := fmt.Sscanf(sc.Text(), "acked %s %d %d", &a.session, &a.seq, &a.pos); err == nil {
			acks = append(acks, a)
		}
	}
	_ = cmd.Wait()
	if len(acks) < 500 {
		t.Fatalf("the child acknowledged %d appends before it ended, want 500", len(acks))
	}
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer db.Close()
	l, err := db.Group("g", GroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	byPos := map[uint64]replog.Entry{}
	var last uint64
	for _, a := range acks {
		last = max(last, a.pos)
	}
	for e, err := range l.Watch(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		byPos[e.Position] = e
		if e.Position == last {
			break
		}
	}
	for _, a := range acks {
		e, ok := byPos[a.pos]
		if !ok || e.Session != a.session || e.Seq != a.seq || string(e.Payload) != fmt.Sprintf("%s-%d", a.session, a.seq) {
			t.Fatalf("acknowledged %s/%d at %d: the reopened log has %+v (present %v)", a.session, a.seq, a.pos, e, ok)
		}
		if pos, existed, err := l.AppendOrGet(ctx, replog.Append{Session: a.session, Seq: a.seq, Payload: []byte("again")}); err != nil || !existed || pos != a.pos {
			t.Fatalf("dedup of acknowledged %s/%d after kill -9: %d %v %v, want %d existed", a.session, a.seq, pos, existed, err, a.pos)
		}
	}
	t.Logf("%d acknowledged appends survived kill -9 (last position %d)", len(acks), last)
}
