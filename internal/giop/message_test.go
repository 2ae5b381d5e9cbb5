package giop

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

var (
	versions = []Version{V10, V11, V12}
	orders   = []cdr.ByteOrder{cdr.BigEndian, cdr.LittleEndian}
)

// replicaIOR is a reference with two IIOP profiles, components of every
// kind the package decodes and one it does not, and a profile it keeps
// opaque.
var replicaIOR = ior.IOR{
	TypeID: PrimeRepoID,
	Profiles: []ior.Profile{
		ior.IIOPProfile{Order: cdr.LittleEndian, Version: ior.V12, Host: "10.0.0.7", Port: 4100, ObjectKey: []byte("\xffkey\x00Prime"),
			Components: []ior.Component{
				ior.ORBType{Order: cdr.LittleEndian, ID: ior.ORBTypeOmniORB},
				ior.CodeSets{Char: ior.CodeSet{Native: ior.CodeSetLatin1, Conversion: []uint32{ior.CodeSetUTF8}}, Wchar: ior.CodeSet{Native: ior.CodeSetUTF16}},
				ior.AlternateIIOPAddress{Host: "::1", Port: 4101},
				ior.OpaqueComponent{ID: 0x4a414301, Data: []byte{0, 1, 2}},
			}},
		ior.IIOPProfile{Version: ior.V10, Host: "replica.example", Port: 2809, ObjectKey: []byte("k")},
		ior.OpaqueProfile{ID: 0x54414f01, Data: []byte{1, 0xde, 0xad}},
	},
}

// samples returns one message of every kind, and every status, that
// version v can carry.
func samples(v Version, o cdr.ByteOrder) map[string]Message {
	env := Envelope{Version: v, Order: o}
	out := map[string]Message{}
	add := func(name string, m Message) { out[name] = m }

	req := func(key string) *Request {
		r := &Request{Envelope: env, RequestID: 7, ResponseFlags: FlagsTwoway, Operation: OpIsPrime}
		if key != "" { // decoding gives nil for empty sequences
			r.Target = KeyTarget([]byte(key))
		}
		return r
	}
	r := req("Prime")
	r.SetLongArg(97)
	add("request is_prime", r)
	r = req("")
	r.ResponseFlags = FlagsOneway
	r.Operation = "ping"
	add("oneway request, empty key, no body", r)
	r = req("group/a")
	r.ServiceContexts = []ServiceContext{{ID: ServiceCodeSets, Data: []byte{1, 0, 0, 0, 1, 0, 1, 0, 9, 1, 1, 0}}, {ID: 0x4a414301}} // a vendor context, empty
	r.SetBody(func(e *cdr.Encoder) { e.Octet(1); e.ULongLong(1 << 40); e.String("x") })
	add("request with service contexts and a long long argument", r)
	if v == V12 {
		r = req("")
		r.Target = TargetAddress{Disposition: ProfileAddr, Profile: replicaIOR.Profiles[0]}
		r.ResponseFlags = FlagsSyncWithServer
		add("request ProfileAddr", r)
		r = req("")
		r.Target = TargetAddress{Disposition: ReferenceAddr, Reference: IORAddressingInfo{SelectedProfileIndex: 1, IOR: replicaIOR}}
		add("request ReferenceAddr", r)
		r = req("Prime")
		r.MoreFragments = true
		r.SetLongArg(1)
		add("first fragment of a request", r)
	} else {
		r = req("Prime")
		r.Principal = []byte("nobody")
		r.SetLongArg(-1)
		add("request with principal", r)
		if v == V11 {
			r = req("Prime")
			r.MoreFragments = true
			r.Reserved = [3]byte{1, 2, 3}
			add("first fragment of a request with reserved bytes", r)
		}
	}

	reply := func(s ReplyStatus) *Reply { return &Reply{Envelope: env, RequestID: 7, Status: s} }
	rp := reply(StatusNoException)
	rp.SetBooleanResult(true)
	add("reply boolean", rp)
	rp = reply(StatusNoException)
	rp.SetLongResult(25)
	add("reply long", rp)
	add("reply void", reply(StatusNoException))
	rp = reply(StatusUserException)
	rp.ServiceContexts = []ServiceContext{{ID: 99, Data: []byte{7}}}
	rp.SetBody(func(e *cdr.Encoder) { e.String("IDL:Prime/Overflow:1.0"); e.Double(2.5) })
	add("reply user exception", rp)
	rp = reply(0)
	rp.SetSystemException(Transient(OMGVMCID|1, CompletedNo))
	add("reply system exception", rp)
	rp = reply(0)
	rp.SetForward(replicaIOR, false)
	add("reply location forward", rp)
	if v == V12 {
		rp = reply(0)
		rp.SetForward(replicaIOR, true)
		add("reply location forward perm", rp)
		rp = reply(0)
		rp.SetNeedsAddressingMode(ReferenceAddr)
		add("reply needs addressing mode", rp)
	}

	add("cancel request", &CancelRequest{Envelope: env, RequestID: 1 << 31})
	add("locate request", &LocateRequest{Envelope: env, RequestID: 3, Target: KeyTarget([]byte("Prime"))})
	if v == V12 {
		add("locate request ProfileAddr", &LocateRequest{Envelope: env, RequestID: 3, Target: TargetAddress{Disposition: ProfileAddr, Profile: replicaIOR.Profiles[2]}})
	}
	lr := func(s LocateStatus) *LocateReply { return &LocateReply{Envelope: env, RequestID: 3, Status: s} }
	add("locate reply unknown object", lr(LocateUnknownObject))
	add("locate reply object here", lr(LocateObjectHere))
	l := lr(0)
	l.SetForward(replicaIOR, false)
	add("locate reply object forward", l)
	if v == V12 {
		l = lr(0)
		l.SetForward(replicaIOR, true)
		add("locate reply object forward perm", l)
		l = lr(0)
		l.SetSystemException(ObjectNotExist(0, CompletedNo))
		add("locate reply system exception", l)
		l = lr(0)
		l.SetNeedsAddressingMode(KeyAddr)
		add("locate reply needs addressing mode", l)
	}
	add("close connection", &CloseConnection{Envelope: env})
	add("message error", &MessageError{Envelope: env})
	if v != V10 {
		f := &Fragment{Envelope: env, Body: []byte{1, 2, 3, 4, 5}}
		if v == V12 {
			f.RequestID = 7
		}
		add("fragment", f)
		f2 := *f
		f2.MoreFragments = true
		f2.Body = nil
		add("empty fragment, more to come", &f2)
	}
	return out
}

func TestRoundTripEveryMessage(t *testing.T) {
	t.Parallel()
	for _, v := range versions {
		for _, o := range orders {
			for name, m := range samples(v, o) {
				t.Run(fmt.Sprintf("%v %v %s", v, o, name), func(t *testing.T) {
					t.Parallel()
					b, err := EncodeMessage(m)
					if err != nil {
						t.Fatal(err)
					}
					h, err := ParseHeader(b)
					if err != nil {
						t.Fatal(err)
					}
					if h.Version != v || h.Order != o || h.Type != m.Type() || int(h.Size) != len(b)-HeaderSize ||
						h.MoreFragments != EnvelopeOf(m).MoreFragments {
						t.Fatalf("header %+v", h)
					}
					got, err := DecodeMessage(b)
					if err != nil {
						t.Fatalf("%v\n% x", err, b)
					}
					if !reflect.DeepEqual(got, m) {
						t.Fatalf("round trip\n got %#v\nwant %#v", got, m)
					}
					// Appending after other bytes gives the same message.
					prefixed, err := AppendMessage([]byte("xyz"), m)
					if err != nil || !bytes.Equal(prefixed[3:], b) {
						t.Fatalf("AppendMessage: %v\n% x\n% x", err, prefixed[3:], b)
					}
				})
			}
		}
	}
}

func TestTypedBodiesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range versions {
		for _, o := range orders {
			s := samples(v, o)
			decode := func(name string) Message {
				t.Helper()
				b, err := EncodeMessage(s[name])
				if err != nil {
					t.Fatal(err)
				}
				m, err := DecodeMessage(b)
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			if n, err := decode("request is_prime").(*Request).LongArg(); err != nil || n != 97 {
				t.Errorf("%v %v: LongArg %d, %v", v, o, n, err)
			}
			if b, err := decode("reply boolean").(*Reply).BooleanResult(); err != nil || !b {
				t.Errorf("%v %v: BooleanResult %v, %v", v, o, b, err)
			}
			if n, err := decode("reply long").(*Reply).LongResult(); err != nil || n != 25 {
				t.Errorf("%v %v: LongResult %d, %v", v, o, n, err)
			}
			if x, err := decode("reply system exception").(*Reply).SystemException(); err != nil || x != Transient(OMGVMCID|1, CompletedNo) {
				t.Errorf("%v %v: SystemException %+v, %v", v, o, x, err)
			}
			_, err := decode("reply system exception").(*Reply).LongResult()
			var x SystemException
			if !errors.As(err, &x) || x.Name() != "TRANSIENT" {
				t.Errorf("%v %v: LongResult of an exception reply: %v", v, o, err)
			}
			for _, name := range []string{"reply location forward", "locate reply object forward"} {
				var ref ior.IOR
				var err error
				switch m := decode(name).(type) {
				case *Reply:
					ref, err = m.Forward()
				case *LocateReply:
					ref, err = m.Forward()
				}
				if err != nil || !reflect.DeepEqual(ref, replicaIOR) {
					t.Errorf("%v %v %s: %v\n got %#v\nwant %#v", v, o, name, err, ref, replicaIOR)
				}
			}
			if v == V12 {
				if a, err := decode("reply needs addressing mode").(*Reply).AddressingMode(); err != nil || a != ReferenceAddr {
					t.Errorf("%v: AddressingMode %v, %v", o, a, err)
				}
				if a, err := decode("locate reply needs addressing mode").(*LocateReply).AddressingMode(); err != nil || a != KeyAddr {
					t.Errorf("%v: AddressingMode %v, %v", o, a, err)
				}
				if x, err := decode("locate reply system exception").(*LocateReply).SystemException(); err != nil || x.RepositoryID != RepoIDObjectNotExist {
					t.Errorf("%v: SystemException %v, %v", o, x, err)
				}
				for _, name := range []string{"request ProfileAddr", "request ReferenceAddr"} {
					key, err := decode(name).(*Request).Target.Key()
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					want := map[string]string{"request ProfileAddr": "\xffkey\x00Prime", "request ReferenceAddr": "k"}[name]
					if string(key) != want {
						t.Errorf("%s: key %q, want %q", name, key, want)
					}
				}
			}
		}
	}
}

func TestAccessorsRejectOtherStatuses(t *testing.T) {
	t.Parallel()
	rp := &Reply{Envelope: Envelope{Version: V12}, Status: StatusNoException}
	if _, err := rp.Forward(); err == nil {
		t.Error("Forward of NO_EXCEPTION")
	}
	if _, err := rp.SystemException(); err == nil {
		t.Error("SystemException of NO_EXCEPTION")
	}
	if _, err := rp.AddressingMode(); err == nil {
		t.Error("AddressingMode of NO_EXCEPTION")
	}
	rp.Status = StatusLocationForward
	if _, err := rp.BooleanResult(); err == nil {
		t.Error("BooleanResult of LOCATION_FORWARD")
	}
	// A hand-built negative BodyOffset is an error, not a panic.
	neg := &Reply{Envelope: Envelope{Version: V12}, Status: StatusLocationForward, Body: []byte{1}, BodyOffset: -3}
	if _, err := neg.Forward(); err == nil || !strings.Contains(err.Error(), "negative BodyOffset -3") {
		t.Errorf("Forward with a negative BodyOffset: %v", err)
	}
	lr := &LocateReply{Envelope: Envelope{Version: V12}, Status: LocateObjectHere}
	if _, err := lr.Forward(); err == nil {
		t.Error("Forward of OBJECT_HERE")
	}
	if _, err := lr.SystemException(); err == nil {
		t.Error("SystemException of OBJECT_HERE")
	}
	if _, err := lr.AddressingMode(); err == nil {
		t.Error("AddressingMode of OBJECT_HERE")
	}
}
