// Package cdr implements the Common Data Representation, the transfer syntax
// of GIOP (CORBA 3.x, General Inter-ORB Protocol chapter, "CDR Transfer
// Syntax"): primitive types in either byte order, each aligned on its natural
// boundary relative to the start of the enclosing message or encapsulation,
// strings and octet sequences with a leading unsigned long length, and
// encapsulations (an octet sequence whose first octet names the byte order of
// what follows and whose contents align relative to that octet).
//
// The package does no I/O. An [Encoder] appends to a byte slice; a [Decoder]
// reads from one and never panics on bad input: the first problem is recorded,
// every later read returns a zero value, and [Decoder.Err] reports an [*Error]
// naming the field and the offset where decoding stopped. Lengths are checked
// against the bytes that remain before anything is allocated, so a hostile
// length costs nothing.
//
// Padding bytes are written as zero and ignored on input (some ORBs, omniORB
// among them, leave garbage there).
//
// Usage:
//
//	e := cdr.NewEncoder(nil, cdr.LittleEndian, 0)
//	e.ULong(7)
//	e.String("is_prime")
//	e.Encapsulation(cdr.BigEndian, func(e *cdr.Encoder) { e.ULong(0x00010001) })
//
//	d := cdr.NewDecoder(e.Bytes(), cdr.LittleEndian, 0)
//	id := d.ULong("request_id")
//	op := d.String("operation")
//	d.Encapsulation("code_set", func(d *cdr.Decoder) { _ = d.ULong("native_code_set") })
//	if err := d.Err(); err != nil { ... }
package cdr
