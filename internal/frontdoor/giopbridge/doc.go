// Package giopbridge is the GIOP (CORBA IIOP) front door of a replicated
// group (binding replicated, docs/replication.md): the bridge through which
// unmodified ORB clients reach the group. Every Request is ordered in the
// group's log (through an Orderer, the group's *replhub.Hub); every replica
// applies it, and the client gets the first replica's Reply.
//
// Clients open as many connections as they like and may pipeline requests
// on each: every Request is ordered on a goroutine of its own (at most
// Options.MaxInflight per connection; the bridge stops reading the
// connection while they are all taken) and answered by its request id, in
// the order the replies come.
//
//   - Identity. A Request carrying the FT_REQUEST service context (IOP id
//     13, FT::FTRequestServiceContext) is identified by it: client_id is the
//     session, retention_id the sequence number. A retry (same context, on
//     any connection, to any bridge of the group) is not appended again: it
//     gets the original reply. Without it the connection is the session (a
//     random id, SessionPrefix and 32 hex digits) and the sequence numbers
//     count its requests, so a retry on a new connection is a new request.
//   - Stamps. The bridge adds its time/seed service context
//     (protocol.GIOPServiceContextTimeSeed; see package ordered) to the
//     request, replacing one the client sent, and logs the whole Request
//     message (protocol.OrderedRequest, Kind giop) in the client's GIOP
//     version and byte order. GIOP 1.0 and 1.1 requests keep their body's
//     alignment by padding the requesting_principal (ordered.Encode).
//   - Replies. The replica's reply is a whole GIOP Reply message; the
//     bridge sends it with the client's request id. A oneway Request is
//     ordered like any other and answered with nothing.
//   - LocateRequest for the group's key is answered OBJECT_HERE by the
//     bridge itself (UNKNOWN_OBJECT for another key); CancelRequest is
//     ignored (the call is in the log and runs; its reply is sent anyway).
//
// Errors are SYSTEM_EXCEPTION replies:
//
//	another object key                       OBJECT_NOT_EXIST  COMPLETED_NO
//	malformed FT_REQUEST context, misaligned
//	  GIOP 1.1 fragments                     MARSHAL           COMPLETED_NO
//	no live replica                          TRANSIENT         COMPLETED_NO (minor 0)
//	the log is full (max_log_bytes)          TRANSIENT         COMPLETED_NO (minor OMG 1: resource exhaustion)
//	the log cannot append (unavailable)      TRANSIENT         COMPLETED_NO
//	request above max_payload                IMP_LIMIT         COMPLETED_NO
//	session refused by the log               BAD_PARAM         COMPLETED_NO
//	retry whose reply every replica evicted  NO_RESPONSE       COMPLETED_YES (reply_expired: it ran, its reply is gone)
//	no reply within the request timeout      TIMEOUT           COMPLETED_MAYBE (it is in the log and will run)
//	the replica's reply is not a GIOP Reply  MARSHAL           COMPLETED_YES
//
// IMP_LIMIT for a request above max_payload: the request is well formed
// (not MARSHAL) but beyond a limit of this deployment, and sending it again
// cannot help (not TRANSIENT). NO_RESPONSE for reply_expired: the request
// ran, so nothing a retry does will produce its reply again. In cluster
// mode an append whose answer the log lost may have been made despite
// COMPLETED_NO; a client retrying with the same FT_REQUEST gets its reply,
// not a second execution.
//
// Bad input — bad magic, an unsupported version, a malformed message,
// message_size above Options.MaxMessageSize, fragment misuse, a Reply or
// LocateReply from the client — is answered MessageError and that
// connection alone is closed. GIOP 1.2 fragmented requests are joined
// before they are ordered, and GIOP 1.1 ones when their body keeps its
// alignment. A connection silent for the idle timeout with nothing in
// flight is closed with CloseConnection; a message must arrive whole within
// the request timeout once begun.
//
// Usage:
//
//	br := giopbridge.New(hub, giopbridge.Options{Key: []byte(group)})
//	go br.Serve(ln)         // returns giopbridge.ErrServerClosed after Shutdown
//	...
//	err := br.Shutdown(ctx) // stop accepting, CloseConnection idle clients
package giopbridge
