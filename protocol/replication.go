package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// BindingReplicated is the binding of a replicated group (docs/replication.md):
// the front door is a bridge that orders every request in the group's log,
// every replica applies every entry in log order, and the client gets the
// first reply.
const BindingReplicated = "replicated"

// Headers of replicated groups.
const (
	// HeaderSession names a protocol-aware client's session (at most
	// MaxSessionLength characters); the Go client sends its Fulcrum-Client
	// id.
	HeaderSession = "Fulcrum-Session"
	// HeaderSequence is a decimal uint64, fresh on every call of a session
	// and unique within it (not ordered). A retry sends the same pair.
	HeaderSequence = "Fulcrum-Sequence"
	// HeaderIdempotencyKey is the IETF draft's header: a call with it and
	// no Fulcrum-Session is deduplicated by the key alone.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderTime is the time the bridge stamps on an ordered request, RFC
	// 3339 with nanoseconds, UTC; servers use it instead of their clock.
	HeaderTime = "Fulcrum-Time"
	// HeaderSeed is a decimal uint64 the bridge stamps on an ordered
	// request; servers seed their random source with it.
	HeaderSeed = "Fulcrum-Seed"
	// HeaderPosition is the log position of an ordered request on its
	// reply to the client and on the request an agent delivers; on a
	// checkpoint (GET CheckpointPath) the position the state is at.
	HeaderPosition = "Fulcrum-Position"
	// MaxSessionLength bounds a session id, in characters.
	MaxSessionLength = 128
)

// GIOPServiceContextTimeSeed is the id of the service context the bridge
// adds to an ordered GIOP request (a vendor id, "FLC" + 0x01): its data is
// a CDR encapsulation of unsigned long long nanoseconds since the Unix
// epoch (UTC) followed by unsigned long long seed.
const GIOPServiceContextTimeSeed uint32 = 0x464C4301

// StatePath is where a replication-ready HTTP server serves its state: GET
// returns it (any content type, 404 or 501: the server cannot transfer
// state), PUT replaces it.
const StatePath = "/fulcrum/state"

// CheckpointPath is where a replicated agent serves a checkpoint to a
// joining agent: GET returns the server's state taken between two
// entries, with HeaderPosition naming the last entry applied before it.
const CheckpointPath = "/fulcrum/replication/checkpoint"

// ReplicationHealthzPath is where a replicated agent tells whether it can
// apply its group's log: GET answers 200 while it applies (or can apply)
// entries, 503 while it is starting or joining (before its first hello
// and any state transfer it leads to) and after it stopped. A replicated
// group's replicas are probed there unless health.path is set.
const ReplicationHealthzPath = "/fulcrum/replication/healthz"

// Replicated configures a replicated group (Group.Replicated; binding
// replicated only).
type Replicated struct {
	// MaxPayload bounds one ordered request (encoded), default 1MiB; a
	// larger one is answered 413 and never reaches the log. Keep it below
	// etcd's --max-request-bytes (1.5 MiB by default) in cluster mode.
	MaxPayload ByteSize `json:"max_payload,omitempty" yaml:"max_payload,omitempty"`
	// MaxLogBytes bounds the untrimmed entries of the group's log, default
	// 256MiB; an append beyond it is answered 507.
	MaxLogBytes ByteSize `json:"max_log_bytes,omitempty" yaml:"max_log_bytes,omitempty"`
	// SessionTTL is how long a session's dedup keys live after its last
	// call, default 10m.
	SessionTTL Duration `json:"session_ttl,omitempty" yaml:"session_ttl,omitempty"`
	// ReadOnly are ServeMux patterns ("GET /value", "GET /balance/{rest...}")
	// of calls that skip the log and go to one replica that has applied
	// the session's last write.
	ReadOnly []string `json:"read_only,omitempty" yaml:"read_only,omitempty"`
}

// OrderedRequest is the payload of one log entry: a client's request as
// the bridge took it, stamped with a time and a seed.
type OrderedRequest struct {
	// Kind is "http" or "giop".
	Kind string `json:"kind"`
	// Method, Target (path and query), Header and Body are an HTTP
	// request's (Kind http). Hop-by-hop headers are dropped.
	Method string      `json:"method,omitempty"`
	Target string      `json:"target,omitempty"`
	Header http.Header `json:"header,omitempty"`
	// Body is the HTTP request's body, or the whole GIOP Request message
	// (Kind giop, GIOP 1.0–1.2, unfragmented, with the bridge's service
	// context GIOPServiceContextTimeSeed added).
	Body []byte `json:"body,omitempty"`
	// Time and Seed are the stamps (HeaderTime, HeaderSeed).
	Time time.Time `json:"time"`
	Seed uint64    `json:"seed,string"`
}

// Kinds of OrderedRequest.
const (
	KindHTTP = "http"
	KindGIOP = "giop"
)

// LogEvent is one line of the log stream, GET /v1/groups/{name}/log?from=P
// (Content-Type application/x-ndjson): one JSON object per line.
type LogEvent struct {
	// Type is one of the LogEvent* constants.
	Type string `json:"type"`
	// Position is the entry's position (entry), the position a bridge
	// asks the reply of again (reply_request), or the trim point
	// (hello, trimmed).
	Position uint64 `json:"position,omitempty,string"`
	// Session and Seq identify an entry's request.
	Session string `json:"session,omitempty"`
	Seq     uint64 `json:"seq,omitempty,string"`
	// Origin names the instance that appended the entry (entry) or asks
	// for the reply (reply_request).
	Origin string `json:"origin,omitempty"`
	// ReplyTo is the admin API base URL the reply to this entry (entry)
	// or the reply asked for (reply_request) is posted to; empty: the
	// instance serving the stream.
	ReplyTo string `json:"reply_to,omitempty"`
	// Appended is when the entry was appended (entry).
	Appended time.Time `json:"appended,omitzero"`
	// Request is the entry's payload (entry).
	Request *OrderedRequest `json:"request,omitempty"`
	// Peers are the group's live replicas and how far they have applied
	// (hello), for state transfer.
	Peers []LogPeer `json:"peers,omitempty"`
	// Error says why the stream ends (error): a code and a message.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// Types of LogEvent.
const (
	// LogEventHello is the stream's first line: Position is the log's trim
	// point, Peers the live replicas.
	LogEventHello = "hello"
	// LogEventEntry is one entry, in position order.
	LogEventEntry = "entry"
	// LogEventReplyRequest asks the agent to post its reply to the entry
	// at Position again (a retried request), to ReplyTo or, when empty,
	// the instance serving the stream: from its cache, or as evicted when
	// it no longer has it; an agent that has not applied Position yet
	// posts the reply there too when it does.
	LogEventReplyRequest = "reply_request"
	// LogEventHeartbeat is sent when nothing else was for a second.
	LogEventHeartbeat = "heartbeat"
	// LogEventError ends the stream: Code is trimmed (Position: the trim
	// point), undecodable (Position: the entry) or closed.
	LogEventError = "error"
)

// LogPeer is one live replica of a replicated group as the log stream's
// hello names it.
type LogPeer struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	Applied uint64 `json:"applied,string"`
}

// AppliedReport is the body of POST /v1/groups/{name}/log/applied, sent
// by an agent about once a second with its replica token.
type AppliedReport struct {
	// Applied is the last position the replica has applied.
	Applied uint64 `json:"applied,string"`
	// Checkpoints says whether the replica's server can transfer its state
	// (StatePath or FT::Checkpointable); the log is trimmed up to what
	// every live replica applied only when all of them can.
	Checkpoints bool `json:"checkpoints"`
}

// ReplyBatch is the body of POST /v1/groups/{name}/log/replies.
type ReplyBatch struct {
	Replies []ReplicaReply `json:"replies"`
}

// ReplicaReply is one replica's reply to one entry.
type ReplicaReply struct {
	Position uint64 `json:"position,string"`
	// Evicted is true when the agent no longer has the reply (answering a
	// reply_request); the other fields are then empty.
	Evicted bool `json:"evicted,omitempty"`
	// Status and Header are an HTTP reply's; Body the HTTP reply's body or
	// the whole GIOP Reply message.
	Status int         `json:"status,omitempty"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// Error codes of replicated groups' front doors and log routes.
const (
	// CodeReplyExpired: a retried request was applied, but no live replica
	// still has its reply (409).
	CodeReplyExpired = "reply_expired"
	// CodePayloadTooLarge: the request is above max_payload (413).
	CodePayloadTooLarge = "payload_too_large"
	// CodeLogFull: the log is at max_log_bytes (507).
	CodeLogFull = "log_full"
	// CodeTrimmed: the position asked for is trimmed (log stream).
	CodeTrimmed = "trimmed"
	// CodeUndecodable: an entry cannot be decoded (log stream).
	CodeUndecodable = "undecodable"
)

// ByteSize is a size in bytes, written in JSON and YAML as an integer or a
// string with a unit: "512", "64KiB", "1MiB", "2GiB" (also KB, MB, GB as
// powers of 1000).
type ByteSize int64

// Int64 returns s as an int64.
func (s ByteSize) Int64() int64 { return int64(s) }

// String writes s with the largest binary unit that divides it.
func (s ByteSize) String() string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if s != 0 && int64(s)%u.n == 0 {
			return strconv.FormatInt(int64(s)/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

// MarshalText writes s as String does.
func (s ByteSize) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a size with or without a unit.
func (s *ByteSize) UnmarshalText(b []byte) error {
	v, err := ParseByteSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// UnmarshalJSON reads a number or a string; null leaves s unchanged.
func (s *ByteSize) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		str = string(b)
	}
	return s.UnmarshalText([]byte(str))
}

// ParseByteSize parses a non-negative size: digits, then optionally one of
// B, KB, MB, GB, KiB, MiB, GiB.
func ParseByteSize(str string) (ByteSize, error) {
	t := strings.TrimSpace(str)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	units := map[string]int64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
	mult, ok := units[strings.TrimSpace(t[i:])]
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if i == 0 || !ok || err != nil || n > math.MaxInt64/mult {
		return 0, &ByteSizeError{Value: str}
	}
	return ByteSize(n * mult), nil
}

// Outcall is the body of POST /v1/groups/{name}/outcalls: one replica's
// copy of a call its server made to another service while applying a log
// entry (replicated callers). Every replica makes the same call; the
// balancer forwards the first copy of a Key to URL with the Key as
// Idempotency-Key and answers every copy with the callee's reply.
type Outcall struct {
	// Key is "<group>/<position>/<index>": the group, the entry being
	// applied, and the call's index among that entry's calls (from 0).
	Key string `json:"key"`
	// Method, URL (absolute, http or https), Header and Body are the
	// call's. A GIOP call has Method OutcallMethodGIOP, the callee's
	// reference (a corbaloc: URL or a stringified IOR) as URL, no Header
	// and the whole GIOP Request message as Body; its reply's Body is the
	// callee's whole GIOP Reply message, Status 200.
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// OutcallMethodGIOP is the Method of an Outcall that is a GIOP Request
// (see Outcall).
const OutcallMethodGIOP = "GIOP"

// OutcallReply is the answer to an Outcall: the callee's reply, or, when
// the callee could not be reached, status 502 with the reason in Error
// (every copy gets the same).
type OutcallReply struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// ParseOutcallKey splits an Outcall's Key and checks it names group.
func ParseOutcallKey(key, group string) (position, index uint64, err error) {
	parts := strings.Split(key, "/")
	if len(parts) != 3 || parts[0] != group {
		return 0, 0, &FieldError{Field: "key", Value: key, Allowed: fmt.Sprintf("must be %q followed by /<position>/<index>", group)}
	}
	position, err1 := strconv.ParseUint(parts[1], 10, 64)
	index, err2 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || position == 0 {
		return 0, 0, &FieldError{Field: "key", Value: key, Allowed: "position (from 1) and index must be decimal uint64s"}
	}
	return position, index, nil
}

// ByteSizeAllowed says what a ByteSize accepts, for error messages.
const ByteSizeAllowed = `must be a size in bytes such as 1048576 or "1MiB" (units B, KB, MB, GB, KiB, MiB, GiB)`

// ByteSizeError is ParseByteSize's error: Value is not a size.
type ByteSizeError struct {
	Value string
}

func (e *ByteSizeError) Error() string {
	return fmt.Sprintf("invalid size %q: %s", e.Value, ByteSizeAllowed)
}

// ReplyRequest is the body of POST /v1/groups/{name}/log/ask, which the
// instance of a cluster whose bridge needs the reply at Position again
// sends to the other instances (with the admin token): their log streams
// pass the request on to their agents, which post the reply to ReplyTo
// (that instance's admin API base URL).
type ReplyRequest struct {
	Position uint64 `json:"position,string"`
	ReplyTo  string `json:"reply_to"`
}
