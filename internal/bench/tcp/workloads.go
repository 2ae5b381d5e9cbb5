package tcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"time"
)

// ExchangeSize is the size of a small exchange's request and of its
// answer.
const ExchangeSize = 64

// BulkSize is the size of a bulk transfer, sent and echoed back.
const BulkSize = 1 << 20

// dial connects to addr within opTimeout.
func dial(ctx context.Context, addr string) (*net.TCPConn, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return nc.(*net.TCPConn), nil
}

// exchange sends msg on nc and reads as many bytes back into buf, checking
// they are msg's.
func exchange(nc net.Conn, msg, buf []byte) error {
	_ = nc.SetDeadline(time.Now().Add(opTimeout))
	if _, err := nc.Write(msg); err != nil {
		return err
	}
	if _, err := io.ReadFull(nc, buf[:len(msg)]); err != nil {
		return err
	}
	if !bytes.Equal(buf[:len(msg)], msg) {
		return fmt.Errorf("bench tcp: the echo answered other bytes than those sent")
	}
	return nil
}

// exchangeWorker is a persistent connection sending 64-byte requests and
// reading their 64-byte answers, one at a time.
func exchangeWorker(a *arm) func(ctx context.Context, i int) (op, func(), error) {
	return func(ctx context.Context, i int) (op, func(), error) {
		nc, err := dial(ctx, a.addr(i))
		if err != nil {
			return nil, nil, err
		}
		msg := bytes.Repeat([]byte{byte('a' + i%26)}, ExchangeSize)
		buf := make([]byte, ExchangeSize)
		return func(context.Context) error { return exchange(nc, msg, buf) }, func() { nc.Close() }, nil
	}
}

// bulkWorker is a persistent connection sending 1 MiB and reading the
// 1 MiB back (while sending) per operation.
func bulkWorker(a *arm) func(ctx context.Context, i int) (op, func(), error) {
	return func(ctx context.Context, i int) (op, func(), error) {
		nc, err := dial(ctx, a.addr(i))
		if err != nil {
			return nil, nil, err
		}
		out := make([]byte, BulkSize)
		for j := range out {
			out[j] = byte(j*7 + i)
		}
		in := make([]byte, BulkSize)
		wrote := make(chan error, 1)
		return func(context.Context) error {
			_ = nc.SetDeadline(time.Now().Add(opTimeout))
			go func() {
				_, err := nc.Write(out)
				wrote <- err
			}()
			_, rerr := io.ReadFull(nc, in)
			if rerr != nil {
				nc.Close() // unblocks the writer
			}
			werr := <-wrote
			switch {
			case rerr != nil:
				return rerr
			case werr != nil:
				return werr
			case !bytes.Equal(in, out):
				return fmt.Errorf("bench tcp: the echo answered other bytes than those sent")
			}
			return nil
		}, func() { nc.Close() }, nil
	}
}

// connectWorker makes a new connection per operation: connect, one
// 64-byte exchange, close.
func connectWorker(a *arm) func(ctx context.Context, i int) (op, func(), error) {
	return func(_ context.Context, i int) (op, func(), error) {
		msg := bytes.Repeat([]byte{byte('A' + i%26)}, ExchangeSize)
		buf := make([]byte, ExchangeSize)
		k := i
		return func(ctx context.Context) error {
			nc, err := dial(ctx, a.addr(k))
			k++
			if err != nil {
				return err
			}
			defer nc.Close()
			return exchange(nc, msg, buf)
		}, func() {}, nil
	}
}
