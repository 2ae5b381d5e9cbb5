package giop

import "strconv"

// MsgType is the message_type octet of the GIOP header (GIOP::MsgType_1_1).
type MsgType uint8

// Message types (CORBA 3.x, GIOP chapter, "GIOP Message Header").
const (
	MsgRequest         MsgType = 0
	MsgReply           MsgType = 1
	MsgCancelRequest   MsgType = 2
	MsgLocateRequest   MsgType = 3
	MsgLocateReply     MsgType = 4
	MsgCloseConnection MsgType = 5
	MsgMessageError    MsgType = 6
	MsgFragment        MsgType = 7 // GIOP 1.1 and later
)

var msgTypeNames = [...]string{
	"Request", "Reply", "CancelRequest", "LocateRequest", "LocateReply",
	"CloseConnection", "MessageError", "Fragment",
}

// String returns the spec's name of t, like "LocateReply".
func (t MsgType) String() string {
	if int(t) < len(msgTypeNames) {
		return msgTypeNames[t]
	}
	return "MsgType(" + strconv.Itoa(int(t)) + ")"
}

// validIn reports whether t exists in GIOP version v.
func (t MsgType) validIn(v Version) bool {
	if t == MsgFragment {
		return v.atLeast(1)
	}
	return t < MsgFragment
}

// fragmentableIn reports whether a message of type t may have the more
// fragments flag set in version v (CORBA 3.x, GIOP chapter, "Fragment
// Message"): Request and Reply from 1.1, LocateRequest and LocateReply from
// 1.2, and Fragment itself.
func (t MsgType) fragmentableIn(v Version) bool {
	switch t {
	case MsgRequest, MsgReply, MsgFragment:
		return v.atLeast(1)
	case MsgLocateRequest, MsgLocateReply:
		return v.atLeast(2)
	}
	return false
}
