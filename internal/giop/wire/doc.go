// Package wire reads and writes whole GIOP messages on a byte stream: the
// framing a GIOP server or client ORB needs around the codec of package giop.
// A Framer reads messages one at a time as they come: it checks each
// header before reading its body (so message_size is bounded by the limit
// before anything is allocated), grows a body's buffer with the bytes that
// actually arrived, waits for a message to begin within an idle time, and
// may bound what the half-read messages of many connections hold together
// (Budget). A Joiner joins fragmented messages back into whole ones; a
// Tracker follows fragmented messages passed on as they are. A Reader is
// a Framer and a Joiner of GIOP 1.2 fragments; a Writer serialises whole
// messages from several goroutines onto one connection. RequestID is the
// request id of any message that carries one.
//
// Usage, on a server connection:
//
//	r := wire.NewReader(conn, giop.Limits{})
//	for {
//		b, err := r.Next()
//		if wire.IsProtocolError(err) {
//			// answer MessageError in r.Version() and close
//		}
//		if err != nil {
//			return // connection closed or broken
//		}
//		m, err := giop.DecodeMessage(b)
//		...
//	}
package wire
