//go:build linux

package tcpdoor_test

import (
	"bytes"
	"io"
	"net"
	"os"
	"runtime"
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

// openFDs is the number of this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// An idle proxied connection holds no splice pipe: 50 idle connections
// cost the 4 descriptors each of the client, the front door's two sides
// and the replica, not 4 more for two pipes each. Not parallel: the count
// is the process's.
func TestIdleConnectionsHoldNoPipes(t *testing.T) {
	r := newServer(t, echo("r0"))
	g := newGroup(t, []string{r.addr()}, groupOptions{})
	d := startDoor(t, g, tcpdoor.Options{})
	c := dial(t, d.addr)
	roundTrip(t, c, "warm") // the pipe pool has its first pipes
	before := openFDs(t)
	const n = 50
	for range n {
		roundTrip(t, dial(t, d.addr), "x")
	}
	bound := 4*n + 16
	eventually(t, "the idle connections hold no pipes", func() bool {
		runtime.GC() // pipes left in net's pool are closed when it is collected
		return openFDs(t)-before <= bound
	})
	t.Logf("%d descriptors for %d idle connections", openFDs(t)-before, n)
}

// The copy adapts to the traffic, as HAProxy's splice-auto does: small
// exchanges go through a buffer (read(2) and write(2): the front door
// reads each 64-byte message in each direction, so the process's read(2)
// bytes grow by three times what the client reads back), bulk is spliced
// (8 MiB each way add little more than the client's own 8 MiB), and after
// the bulk, small exchanges on the same connection take the read path
// again (from the second message on). The old splice-only copy fails the
// first assertion, a copy through user space the second. The replica echoes with a splice, so it reads nothing itself. Not
// parallel: the process's counter must see this test alone.
func TestCopyReadsSmallSplicesBulk(t *testing.T) {
	r := newServer(t, func(c net.Conn) {
		defer c.Close()
		_, _ = io.Copy(c, c) // TCPConn to itself: splices
	})
	g := newGroup(t, []string{r.addr()}, groupOptions{})
	d := startDoor(t, g, tcpdoor.Options{})
	c := dial(t, d.addr)
	const n, size = 200, 64
	exchanges := func(phase string) {
		t.Helper()
		msg := bytes.Repeat([]byte{'x'}, size)
		buf := make([]byte, size)
		before := readChars(t)
		for range n {
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatal(err)
			}
		}
		read := readChars(t) - before
		// The first message after the bulk may be spliced: a direction
		// goes back to the read path after a small splice.
		if want := int64(3 * (n - 1) * size); read < want {
			t.Errorf("%s: the process read %d bytes with read(2) for %d small exchanges of %d bytes, want at least %d: the front door did not take the read path", phase, read, n, size, want)
		}
		t.Logf("%s: read(2) bytes: %d for %d exchanges of %d bytes", phase, read, n, size)
	}
	exchanges("before the bulk")

	const bulk = 8 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), bulk/16)
	before := readChars(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		errc <- err
	}()
	got := make([]byte, bulk)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, errc, "the bulk write"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("the bulk came back changed")
	}
	read := readChars(t) - before
	if read > bulk+bulk/4 {
		t.Errorf("the process read %d bytes with read(2) for %d echoed: the front door copied the bulk in user space", read, bulk)
	}
	t.Logf("bulk: read(2) bytes: %d for %d proxied each way", read, bulk)

	exchanges("after the bulk")
}

// heapInUse is the process's heap in use after collecting twice (which
// also empties sync.Pools).
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// An idle proxied connection holds no read buffer: after an exchange
// each, 200 idle connections grow the heap by less than one buffer each
// (the client's, the front door's and the replica's connection state, a
// few KiB), where directions holding their buffers while they wait would
// add two each. Not parallel: the heap is the process's.
func TestIdleConnectionsHoldNoBuffers(t *testing.T) {
	r := newServer(t, func(c net.Conn) {
		defer c.Close()
		_, _ = io.Copy(c, c) // TCPConn to itself: splices, no buffer
	})
	g := newGroup(t, []string{r.addr()}, groupOptions{})
	d := startDoor(t, g, tcpdoor.Options{})
	exchange := func() {
		c := dial(t, d.addr)
		var b [2]byte
		if _, err := c.Write([]byte("x\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, b[:]); err != nil {
			t.Fatal(err)
		}
	}
	exchange()
	before := heapInUse()
	const n = 200
	for range n {
		exchange()
	}
	grown := heapInUse() - before
	if grown >= n*tcpdoor.ReadBufSize {
		t.Errorf("%d idle connections grew the heap by %d bytes (%d each), want less than %d each: idle directions hold read buffers", n, grown, grown/n, tcpdoor.ReadBufSize)
	}
	t.Logf("heap: %d bytes per idle connection", grown/n)
}
