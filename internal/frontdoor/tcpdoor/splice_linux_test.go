//go:build linux

package tcpdoor_test

import (
	"bytes"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/tcpdoor"
)

// readChars is this process's rchar from /proc/self/io: the bytes read
// with read(2) and its kin (splice(2) does not count).
func readChars(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatalf("reading /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no rchar in /proc/self/io:\n%s", b)
	return 0
}

// The front door's copy splices: proxying 8 MiB each way reads (with
// read(2)) only what the test's client itself reads, not the 16 MiB a
// user-space copy through the front door would add. Not parallel: the
// process's counter must see this test alone.
func TestCopySplices(t *testing.T) {
	r := newServer(t, func(c net.Conn) {
		defer c.Close()
		_, _ = io.Copy(c, c) // TCPConn to itself: splices too
	})
	g := newGroup(t, []string{r.addr()}, groupOptions{})
	d := startDoor(t, g, tcpdoor.Options{})
	c := dial(t, d.addr)
	const size = 8 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	before := readChars(t)
	go func() {
		_, _ = c.Write(payload)
		_ = c.CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil || len(got) != size {
		t.Fatalf("read back %d bytes, %v; want %d", len(got), err, size)
	}
	read := readChars(t) - before
	if read > size+size/4 {
		t.Errorf("the process read %d bytes with read(2) for %d echoed: the front door copied in user space", read, size)
	}
	t.Logf("read(2) bytes: %d for %d proxied each way", read, size)
}
