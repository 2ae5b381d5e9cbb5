// Package giop encodes and decodes the messages of the General Inter-ORB
// Protocol, versions 1.0, 1.1 and 1.2 (CORBA 3.x, GIOP chapter, "GIOP
// Message Formats"), in either byte order: Request, Reply, CancelRequest,
// LocateRequest, LocateReply, CloseConnection, MessageError and Fragment,
// with their service contexts, target addresses and the bodies the fulcrum
// front door needs to understand (LOCATION_FORWARD IORs, system exceptions,
// addressing modes). It does no I/O: bytes in, values out, and back.
//
// Operation arguments and results are kept as raw bytes with the offset
// they had in the message, since CDR alignment inside them is relative to
// the message start; a proxy forwards them untouched, and the few servants
// that need them decode them with BodyDecoder (see prime.go for the Prime
// test interface).
//
// Decoding never panics and never allocates more than the input can justify:
// every length is checked against the bytes left, and message_size against
// [Limits.MaxMessageSize] (16 MiB by default). Errors name the field and its
// offset from the message start, and match ErrBadMagic, ErrVersion,
// ErrTooLarge or ErrMalformed, which the front door answers with
// MessageError. Padding bytes are ignored on input, whatever they hold, and
// written as zeros, so a decoded message re-encodes to the bytes it came from
// except for padding.
//
// Object references live in package ior and the transfer syntax in package
// cdr.
//
// A front door's loop, in outline:
//
//	hdr := make([]byte, giop.HeaderSize)
//	io.ReadFull(conn, hdr)
//	h, err := giop.ParseHeader(hdr) // checks magic, version, size limit
//	if err != nil {
//		out, _ := giop.EncodeMessage(&giop.MessageError{Envelope: giop.Envelope{Version: giop.Highest}})
//		conn.Write(out) // then close
//	}
//	msg := make([]byte, giop.HeaderSize+int(h.Size))
//	copy(msg, hdr)
//	io.ReadFull(conn, msg[giop.HeaderSize:])
//	m, err := giop.DecodeMessage(msg)
//	switch m := m.(type) {
//	case *giop.Request:
//		rep := giop.ReplyTo(m, giop.StatusLocationForward)
//		rep.SetForward(replicaIOR, false)
//		out, err := giop.EncodeMessage(rep)
//		...
//	}
package giop
