package giop_test

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// A front door answers a client's call on the group's key with
// LOCATION_FORWARD to a replica, in the client's version and byte order.
func Example_locationForward() {
	// What an omniORB client sends first: is_prime(7) on the group's key.
	call := &giop.Request{
		Envelope:      giop.Envelope{Version: giop.V10, Order: cdr.LittleEndian},
		RequestID:     2,
		ResponseFlags: giop.FlagsTwoway,
		Target:        giop.KeyTarget([]byte("primes")),
		Operation:     giop.OpIsPrime,
	}
	call.SetLongArg(7)
	wire, _ := giop.EncodeMessage(call)

	m, err := giop.DecodeMessage(wire)
	if err != nil {
		fmt.Println("answer with MessageError:", err)
		return
	}
	req := m.(*giop.Request)
	key, _ := req.Target.Key()
	replica, _ := ior.Parse("corbaloc:iiop:1.2@10.0.0.7:4100/Prime")
	replica.TypeID = giop.PrimeRepoID

	rep := giop.ReplyTo(req, giop.StatusLocationForward)
	rep.SetForward(replica, false)
	out, _ := giop.EncodeMessage(rep)

	back, _ := giop.DecodeMessage(out)
	ref, _ := back.(*giop.Reply).Forward()
	p, _ := ref.IIOP()
	fmt.Printf("%s for %q: GIOP %v %v %v to %s %s\n", req.Operation, key, rep.Version, rep.Order, rep.Status, ref.TypeID, p.Address())
	// Output: is_prime for "primes": GIOP 1.0 little-endian LOCATION_FORWARD to IDL:Prime:1.0 1.2@10.0.0.7:4100
}

// Unknown versions and bad magic are errors the front door answers with
// MessageError in the highest version it speaks.
func ExampleParseHeader() {
	_, err := giop.ParseHeader([]byte("GIOP\x01\x03\x00\x00\x00\x00\x00\x00"))
	fmt.Println(err)
	out, _ := giop.EncodeMessage(&giop.MessageError{Envelope: giop.Envelope{Version: giop.Highest}})
	fmt.Printf("% x\n", out)
	// Output:
	// giop: unsupported GIOP version: 1.3 at offset 4
	// 47 49 4f 50 01 02 00 06 00 00 00 00
}

// A servant decodes the argument and answers with the result.
func ExampleRequest_LongArg() {
	req := &giop.Request{Envelope: giop.Envelope{Version: giop.V12}, RequestID: 4, ResponseFlags: giop.FlagsTwoway,
		Target: giop.KeyTarget([]byte("Prime")), Operation: giop.OpPrimeCount}
	req.SetLongArg(100)

	x, _ := req.LongArg()
	rep := giop.ReplyTo(req, giop.StatusNoException)
	rep.SetLongResult(25) // primes below x
	out, _ := giop.EncodeMessage(rep)

	m, _ := giop.DecodeMessage(out)
	n, _ := m.(*giop.Reply).LongResult()
	fmt.Println(req.Operation, x, "=", n)
	// Output: prime_count 100 = 25
}
