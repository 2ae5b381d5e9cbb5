package giopdoor

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// fixedGroup is a group whose snapshot never changes: one member whose
// reference points at a closed port.
type fixedGroup struct{ snap *frontdoor.Snapshot }

func (g fixedGroup) Snapshot() *frontdoor.Snapshot                { return g.snap }
func (fixedGroup) Bound(*frontdoor.Member, string, bool)          {}
func (fixedGroup) Observe(*frontdoor.Member, time.Duration, bool) {}
func (g fixedGroup) pick(*strategy.Request) (*strategy.Replica, error) {
	return g.snap.Eligible[0].Replica, nil
}

type pickFunc func(*strategy.Request) (*strategy.Replica, error)

func (f pickFunc) Pick(r *strategy.Request) (*strategy.Replica, error) { return f(r) }

func newFixedGroup(binding string) fixedGroup {
	ref := ior.IOR{TypeID: giop.PrimeRepoID, Profiles: []ior.Profile{ior.IIOPProfile{Version: ior.V12, Host: "127.0.0.1", Port: 1, ObjectKey: []byte("k")}}}
	rep := &strategy.Replica{ID: "r", Weight: 1, Live: new(strategy.Live)}
	m := &frontdoor.Member{Replica: rep, Address: ref.String(), IOR: &ref, State: protocol.StateActive, Counters: new(frontdoor.Counters)}
	g := fixedGroup{snap: &frontdoor.Snapshot{
		Group: "g", Binding: binding, Eligible: []*frontdoor.Member{m}, Members: map[string]*frontdoor.Member{"r": m},
		Timeouts: protocol.Timeouts{Connect: protocol.Duration(100 * time.Millisecond), Request: protocol.Duration(time.Second), Idle: protocol.Duration(time.Second)},
		GIOP:     protocol.GIOP{Locate: protocol.LocateForward, MaxMessageSize: 4096},
	}}
	g.snap.Picker = pickFunc(g.pick)
	return g
}

// FuzzConnection feeds arbitrary bytes to a front door connection, then
// ends the client's side: the front door must answer only well-formed GIOP
// messages, close the connection, and neither panic nor hang.
func FuzzConnection(f *testing.F) {
	seed := func(m giop.Message) []byte {
		b, err := giop.EncodeMessage(m)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	req := &giop.Request{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 1, ResponseFlags: giop.FlagsTwoway, Target: giop.KeyTarget([]byte("g")), Operation: "is_prime"}
	req.SetLongArg(7)
	loc := &giop.LocateRequest{Envelope: giop.Envelope{Version: giop.V10, Order: cdr.LittleEndian}, RequestID: 2, Target: giop.KeyTarget([]byte("g"))}
	frag := *req
	frag.MoreFragments = true
	f.Add(byte(0), seed(req))
	f.Add(byte(1), seed(req))
	f.Add(byte(0), append(seed(loc), seed(req)...))
	f.Add(byte(1), append(seed(&frag), seed(&giop.Fragment{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 1, Body: make([]byte, 8)})...))
	f.Add(byte(0), []byte("GIOP\x01\x02\x00\x00\xff\xff\xff\xff"))
	f.Add(byte(1), seed(&giop.CancelRequest{Envelope: giop.Envelope{Version: giop.V11}, RequestID: 1}))

	groups := []fixedGroup{newFixedGroup(protocol.OnDemand), newFixedGroup(protocol.PerRequest)}
	servers := make([]*Server, len(groups))
	addrs := make([]string, len(groups))
	for i, g := range groups {
		servers[i] = New(g, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.Fatal(err)
		}
		addrs[i] = ln.Addr().String()
		go func() { _ = servers[i].Serve(ln) }()
	}
	f.Cleanup(func() {
		for _, s := range servers {
			_ = s.Close()
		}
	})

	f.Fuzz(func(t *testing.T, mode byte, data []byte) {
		nc, err := net.Dial("tcp", addrs[int(mode)%len(addrs)])
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		written := make(chan error, 1)
		go func() {
			_, err := nc.Write(data)
			_ = nc.(*net.TCPConn).CloseWrite()
			written <- err
		}()
		// Read every answer until the front door closes.
		for {
			m, err := readAnswer(nc)
			if errors.Is(err, io.EOF) || isReset(err) {
				break
			}
			if err != nil {
				t.Fatalf("reading the front door's answers: %v", err)
			}
			if m.Type() == giop.MsgRequest || m.Type() == giop.MsgFragment {
				t.Fatalf("the front door sent a %v", m.Type())
			}
		}
		<-written
	})
}

// readAnswer reads one whole message and decodes it.
func readAnswer(r io.Reader) (giop.Message, error) {
	var hdr [giop.HeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("a truncated message header")
		}
		return nil, err
	}
	h, err := giop.ParseHeader(hdr[:])
	if err != nil {
		return nil, err
	}
	b := make([]byte, giop.HeaderSize+int(h.Size))
	copy(b, hdr[:])
	if _, err := io.ReadFull(r, b[giop.HeaderSize:]); err != nil {
		return nil, errors.New("a truncated message body")
	}
	return giop.DecodeMessage(b)
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}
