package protocol

// How a GIOP group answers a LocateRequest (GIOP.Locate).
const (
	// LocateForward answers a LocateRequest for the group with
	// OBJECT_FORWARD to the picked replica: the front door handles one
	// message per new client, and the first call's arguments are sent
	// once. (omniORB locates the forwarded reference again, so it takes
	// as many round trips as with LocateHere: docs/giop-omniorb.md.)
	LocateForward = "forward"
	// LocateHere answers OBJECT_HERE; the client's Request that follows is
	// then answered LOCATION_FORWARD.
	LocateHere = "here"
)

// GIOP configures a GIOP front door. Only groups with protocol giop may
// set it; their unset fields take the defaults.
type GIOP struct {
	// Locate is how a LocateRequest for the group is answered on-demand
	// and per-session: forward (default), OBJECT_FORWARD to the picked
	// replica; or here, OBJECT_HERE, so that the Request that follows is
	// forwarded.
	Locate string `json:"locate,omitempty" yaml:"locate,omitempty"`
	// MaxMessageSize bounds message_size, in bytes; larger messages are
	// answered MessageError and their connection closed. Default 16 MiB,
	// range [1 KiB, 1 GiB].
	MaxMessageSize int `json:"max_message_size,omitempty" yaml:"max_message_size,omitempty"`
	// MaxBufferedBytes bounds what the messages the front door is still
	// reading (bodies as far as they arrived, fragments awaiting the rest
	// of their message) hold together, in bytes, over all its client
	// connections. At the bound it stops reading from connections in the
	// middle of a message until memory is given back: back-pressure, not
	// an error. One connection at a time may go past the bound by its
	// message, so that reading never stalls altogether.
	// Default 64 MiB, range [64 KiB, 64 GiB].
	MaxBufferedBytes int `json:"max_buffered_bytes,omitempty" yaml:"max_buffered_bytes,omitempty"`
}

// Reference is a GIOP group's object reference, both ways clients take it.
type Reference struct {
	// Corbaloc is "corbaloc:iiop:<host>:<port>/<group>".
	Corbaloc string `json:"corbaloc"`
	// IOR is the same reference stringified, typed with the group's
	// replicas' repository id.
	IOR string `json:"ior"`
}
