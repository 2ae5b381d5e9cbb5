// Package giopdoor is the GIOP (CORBA IIOP) front door of one group: the
// group's object reference, "corbaloc:iiop:<host>:<port>/<group>", served
// as the TAO paper's replica locator so that unmodified ORB clients are balanced
// with standard GIOP messages.
//
// Every message is served from the group's current snapshot
// (frontdoor.Group.Snapshot), read once per message. Answers go out in the
// GIOP version and byte order of the message they answer.
//
//   - on-demand and per-session: a two-way Request for the group's object
//     key (the group's name, whatever the addressing disposition) is
//     answered with a Reply of status LOCATION_FORWARD carrying the picked
//     replica's IOR (its registered reference, repository id kept); the
//     client ORB re-sends the call there and keeps using that replica until
//     forwarded again. A LocateRequest is answered OBJECT_FORWARD with the
//     same IOR by default (giop.locate forward: the client's next message
//     goes straight to its replica), or OBJECT_HERE with giop.locate here
//     (the Request that follows is then forwarded). Both bind the client
//     (Group.Bound). GIOP carries no client id to the front door, so
//     planned moves cannot name the client: bindings always come from the
//     strategy's picker. Oneway Requests cannot be forwarded (no Reply
//     carries the forward) and are proxied to the picked replica instead.
//   - per-request: a proxy. Client connections are multiplexed onto pooled
//     connections per replica and GIOP version (up to 4, a new one opened
//     when every one carries 32 calls); request ids are remapped and
//     replies routed back under the client's id; the target is rewritten to
//     the replica's object key; fragmented messages are joined before they
//     are forwarded; CancelRequest is forwarded with the remapped id; oneway
//     calls are passed on. A replica's CloseConnection means the calls it
//     had not answered did not run: they are sent again, on a fresh
//     connection or to another replica. A replica answering
//     LOCATION_FORWARD (a draining replica's side-car) has the call sent
//     to another replica instead of the forward relayed. A LocateRequest is
//     answered OBJECT_HERE. Each replica takes at most Snapshot.MaxInflight
//     calls at once; each call is bounded by the request timeout (then
//     TIMEOUT) and is reported to Group.Observe with its latency and
//     whether it failed.
//
// Errors are system exceptions (Reply SYSTEM_EXCEPTION; LocateReply
// UNKNOWN_OBJECT or, in GIOP 1.2, LOC_SYSTEM_EXCEPTION): a key that is not
// the group's gets OBJECT_NOT_EXIST; no live replica gets TRANSIENT
// (COMPLETED_NO) at once; replicas all at their in-flight limit TRANSIENT
// minor 1; a proxied call whose replica connection is lost after sending
// COMM_FAILURE (COMPLETED_MAYBE), one without a reply in time TIMEOUT.
//
// Bad input — bad magic, an unsupported version, a malformed header or
// body, message_size above giop.max_message_size (16 MiB by default),
// fragment misuse (a fragment of nothing, a version change, an interrupted
// GIOP 1.1 fragmented message, more data held open than the size limit) —
// is answered MessageError and that connection alone is closed. A
// connection silent for the idle timeout with nothing in flight is closed
// with CloseConnection; a message must arrive whole within the request
// timeout once begun.
//
// Messages are framed by package wire: a body is read as it arrives, and
// what the half-read messages of all client connections hold together is
// bounded by giop.max_buffered_bytes (64 MiB by default); at the bound the
// front door stops reading from those connections until memory is given
// back, but for one at a time that may go past it by its message.
//
// Usage:
//
//	fd := giopdoor.New(group, giopdoor.Options{Logger: log})
//	go fd.Serve(ln)          // returns giopdoor.ErrServerClosed after Shutdown
//	...
//	err := fd.Shutdown(ctx)  // stop accepting, CloseConnection idle clients
package giopdoor
