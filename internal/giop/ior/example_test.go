package ior_test

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
)

// The group's own references, built from its advertised address.
func ExampleCorbaloc_IOR() {
	loc, err := ior.ParseCorbaloc("corbaloc:iiop:1.2@lb.example:2809/primes")
	if err != nil {
		panic(err)
	}
	ref := loc.IOR("IDL:Prime:1.0")
	back, _ := ior.Parse(ref.String())
	p, _ := back.IIOP()
	fmt.Println(loc, back.TypeID, p.Address(), string(p.ObjectKey))
	// Output: corbaloc:iiop:1.2@lb.example:2809/primes IDL:Prime:1.0 1.2@lb.example:2809 primes
}

// A side-car registers the replica's reference with its own address: same
// type and key, so forwarded clients keep a typed reference.
func ExampleIOR_WithAddress() {
	replica, _ := ior.Parse("corbaloc:iiop:1.2@10.0.0.7:21000/Prime")
	replica.TypeID = "IDL:Prime:1.0"
	agent := replica.WithAddress("10.0.0.7", 4100)
	p, _ := agent.IIOP()
	fmt.Println(agent.TypeID, p.Address(), string(p.ObjectKey))
	// Output: IDL:Prime:1.0 1.2@10.0.0.7:4100 Prime
}
