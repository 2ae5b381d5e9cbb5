package giopbridge_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
)

// FuzzConnection sends arbitrary bytes to the bridge (a real hub over a
// real log, no replica) on a real connection, then closes its sending
// side: the bridge must neither panic nor hang — the connection ends
// within the bound — and must keep serving other connections.
func FuzzConnection(f *testing.F) {
	enc := func(m giop.Message) []byte {
		b, err := giop.EncodeMessage(m)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	ft := giop.ServiceContext{ID: ordered.ServiceFTRequest, Data: ordered.FTRequest{ClientID: "c", RetentionID: 1}.Encode(cdr.LittleEndian)}
	f.Add(enc(request(giop.V12, cdr.BigEndian, 1, groupKey, backend.OpIncrement, ft)))
	f.Add(enc(request(giop.V10, cdr.LittleEndian, 2, "other", backend.OpValue)))
	f.Add(enc(&giop.LocateRequest{Envelope: giop.Envelope{Version: giop.V11}, RequestID: 3, Target: giop.KeyTarget([]byte(groupKey))}))
	f.Add(enc(&giop.CancelRequest{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 3}))
	f.Add(enc(&giop.Fragment{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 4, Body: []byte{1, 2, 3, 4}}))
	f.Add([]byte("GIOP\x01\x02\x02\x00\x00\x00\x00\x08\x00\x00\x00\x05\x03\x00\x00\x00"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	r := newRig(f, rigOptions{})
	f.Fuzz(func(t *testing.T, data []byte) {
		nc, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write(data); err != nil {
			return // the bridge closed first (MessageError): fine
		}
		_ = nc.(*net.TCPConn).CloseWrite()
		if _, err := io.Copy(io.Discard, nc); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the bridge did not end the connection within 10s of %q", data)
			}
		}
	})
}
