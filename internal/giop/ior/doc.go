// Package ior reads and writes CORBA object references: Interoperable Object
// References (CORBA 3.x, ORB Interoperability Architecture chapter, "An
// Information Model for Object References" › "Interoperable Object
// References: IORs"), their stringified "IOR:" form ("Stringified Object
// References"), corbaloc URLs ("Object URLs" › "corbaloc URL" and "corbaloc:iiop
// URL"), and the IIOP profile and its components (GIOP chapter, "Internet
// Inter-ORB Protocol (IIOP)" › "IIOP IOR Profiles" and "IIOP IOR Profile
// Components").
//
// IIOP profiles and the ORB type, code sets and alternate address components
// are decoded into Go values; every other profile and component is kept as
// opaque bytes and written back exactly. Decoded values re-encode to the
// bytes they came from except for alignment padding. The package does no
// I/O.
//
// Usage:
//
//	group, err := ior.ParseCorbaloc("corbaloc:iiop:1.2@lb.example:2809/primes")
//	ref := group.IOR("IDL:Prime:1.0") // the group's own IOR
//
//	replica, err := ior.Parse(registeredAddress) // "IOR:..." or "corbaloc:..."
//	fmt.Println(replica.TypeID, replica.String())
//
//	agent := replica.WithAddress("10.0.0.7", 4100) // same type and key, new address
//
//	// one object behind several front doors, as one profile with alternates
//	multi, err := ior.MultiAddress("IDL:Prime:1.0", []byte("primes"), addrs, ior.FormAlternates)
//	for _, ep := range multi.Endpoints() { ... } // every address, in order
package ior
