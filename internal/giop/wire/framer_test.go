package wire_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

// A header claiming 16 MiB followed by a few bytes costs a buffer of the
// read buffer's size, not of the claim.
func TestFramerGrowsWithWhatArrived(t *testing.T) {
	t.Parallel()
	claim := []byte("GIOP\x01\x02\x00\x00\x01\x00\x00\x00")
	f := wire.NewFramer(bytes.NewReader(append(claim, make([]byte, 10)...)), wire.FramerOptions{Limits: giop.Limits{MaxMessageSize: 16 << 20}})
	h, buf, err := f.Read(nil, time.Time{})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Read = %v, want io.ErrUnexpectedEOF", err)
	}
	if h.Size != 16<<20 || len(buf) != giop.HeaderSize+10 || cap(buf) > wire.DefaultBufferSize {
		t.Errorf("claimed %d bytes, got %d in a buffer of %d; want the 22 that came in at most %d", h.Size, len(buf), cap(buf), wire.DefaultBufferSize)
	}
}

// Messages of every size come out whole, reusing the buffer given; a
// header beyond the limit is refused before its body, as a protocol error.
func TestFramerReadsWholeMessages(t *testing.T) {
	t.Parallel()
	var stream bytes.Buffer
	sizes := []int{0, 100, 5000, 70000, 300}
	for i, n := range sizes {
		stream.Write(request(t, uint32(i), cdr.BigEndian, n))
	}
	f := wire.NewFramer(&stream, wire.FramerOptions{})
	var buf []byte
	for i, n := range sizes {
		_, msg, err := f.Read(buf, time.Time{})
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := request(t, uint32(i), cdr.BigEndian, n); !bytes.Equal(msg, want) {
			t.Fatalf("message %d: %d bytes, not the %d sent", i, len(msg), len(want))
		}
		if i > 0 && len(msg) <= cap(buf) && &msg[0] != &buf[:1][0] {
			t.Errorf("message %d did not reuse the buffer of %d bytes", i, cap(buf))
		}
		buf = msg
	}
	if _, _, err := f.Read(buf, time.Time{}); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}

	big := request(t, 1, cdr.LittleEndian, 2000)
	f = wire.NewFramer(bytes.NewReader(big), wire.FramerOptions{Limits: giop.Limits{MaxMessageSize: 1024}})
	if _, _, err := f.Read(nil, time.Time{}); !errors.Is(err, giop.ErrTooLarge) || !wire.IsProtocolError(err) {
		t.Errorf("a message above the limit: %v, want a protocol error wrapping giop.ErrTooLarge", err)
	}
}

// Wait reports ErrIdle when no message begins within the idle time, and
// returns as soon as one does.
func TestFramerWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		client, server := net.Pipe()
		defer client.Close()
		defer server.Close()
		f := wire.NewFramer(server, wire.FramerOptions{})
		start := time.Now()
		if err := f.Wait(time.Second); err != wire.ErrIdle || time.Since(start) != time.Second {
			t.Errorf("Wait on a silent connection = %v after %v, want ErrIdle after 1s", err, time.Since(start))
		}
		msg := request(t, 7, cdr.BigEndian, 10)
		go func() { _, _ = client.Write(msg) }()
		if err := f.Wait(time.Second); err != nil {
			t.Fatalf("Wait with a message coming = %v", err)
		}
		if _, got, err := f.Read(nil, time.Time{}); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("Read after Wait = %d bytes, %v", len(got), err)
		}
		client.Close()
		if err := f.Wait(time.Second); err != io.EOF {
			t.Errorf("Wait on a closed connection = %v, want io.EOF", err)
		}
	})
}

// Framers sharing a Budget go past it by one message at most, and never
// all wait on each other: two messages each larger than the Budget, sent
// at once, are both read whole (one of them on the overdraft); the Budget
// ends empty.
func TestFramerBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const bound = 64 << 10
		b := wire.NewBudget(bound)
		msgs := [][]byte{request(t, 1, cdr.BigEndian, 100<<10), request(t, 2, cdr.LittleEndian, 100<<10)}
		type result struct {
			msg []byte
			err error
		}
		results := make(chan result, len(msgs))
		for _, m := range msgs {
			client, server := net.Pipe()
			defer client.Close()
			f := wire.NewFramer(server, wire.FramerOptions{Budget: b})
			go func() { _, got, err := f.Read(nil, time.Time{}); results <- result{got, err} }()
			go func() { _, _ = client.Write(m) }()
		}
		for range msgs {
			r := <-results
			if r.err != nil || !bytes.Equal(r.msg, msgs[0]) && !bytes.Equal(r.msg, msgs[1]) {
				t.Fatalf("read %d bytes, %v; want one of the messages sent", len(r.msg), r.err)
			}
		}
		st, _ := b.Stats()
		if st.Held != 0 || st.Waiting != 0 {
			t.Errorf("after both messages: %+v, want nothing held", st)
		}
		if st.Peak > bound+len(msgs[0]) {
			t.Errorf("peak %d, above the bound and one message (%d)", st.Peak, bound+len(msgs[0]))
		}
	})
}
