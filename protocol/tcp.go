package protocol

import "time"

// TCP configures a tcp group's front door (protocol tcp only; docs/tcp.md).
// A tcp group balances each connection (binding per-request, the only one
// it accepts); max_inflight caps the connections to one replica and
// timeouts.idle closes a connection with no bytes either way for that long.
type TCP struct {
	// MaxConnections caps the connections the front door has open from
	// clients at once; a connection beyond it is closed at once. 0 (the
	// default) derives it from the descriptor limit (each proxied
	// connection holds two descriptors); range [0, 10000000].
	MaxConnections int `json:"max_connections,omitempty" yaml:"max_connections,omitempty"`
	// MaxConnectionAge closes a connection older than this at its next
	// idle moment (IdleMoment with no bytes either way), so that load can
	// move; 0 (the default) never.
	MaxConnectionAge Duration `json:"max_connection_age,omitempty" yaml:"max_connection_age,omitempty"`
	// DrainTimeout is how long a draining replica's connections may go on
	// before they are closed; default 30s, range [0, 24h].
	DrainTimeout Duration `json:"drain_timeout,omitempty" yaml:"drain_timeout,omitempty"`
	// ProxyProtocol sends and accepts PROXY protocol headers.
	ProxyProtocol ProxyProtocol `json:"proxy_protocol,omitzero" yaml:"proxy_protocol,omitempty"`
}

// IdleMoment is how long a connection must have carried no bytes either
// way for MaxConnectionAge to close it.
const IdleMoment = time.Second

// ProxyProtocol configures the PROXY protocol (HAProxy's, v1 and v2) on a
// tcp group's front door.
type ProxyProtocol struct {
	// Trusted are the CIDRs (or single addresses) of load balancers in
	// front of fulcrum whose PROXY headers are read: a connection from one
	// of them must start with a PROXY header (v1 or v2), and the address
	// in it is the client's for hashing, affinity and the connection
	// table. A connection from elsewhere is taken as it is. Empty (the
	// default): no header is read.
	Trusted []string `json:"trusted,omitempty" yaml:"trusted,omitempty"`
	// Send is the version of the PROXY header sent to replicas at the
	// start of each connection: "" (none, the default), "v1" or "v2".
	Send string `json:"send,omitempty" yaml:"send,omitempty"`
}

// Connection is one row of a tcp group's connection table
// (GET /v1/groups/{name}/connections).
type Connection struct {
	// ID is the connection's id, unique in the group and increasing.
	ID uint64 `json:"id"`
	// Client is the client's address (host:port), from a trusted PROXY
	// header when there was one.
	Client string `json:"client"`
	// Replica is the replica's id, and Address its registered address.
	Replica string `json:"replica"`
	Address string `json:"address"`
	// BytesIn are the bytes from the client to the replica, BytesOut the
	// bytes back.
	BytesIn  uint64 `json:"bytes_in"`
	BytesOut uint64 `json:"bytes_out"`
	// Opened is when the connection was accepted; AgeMS its age and
	// IdleMS the time since its last byte either way, in milliseconds.
	Opened time.Time `json:"opened"`
	AgeMS  int64     `json:"age_ms"`
	IdleMS int64     `json:"idle_ms"`
}

// ConnectionList is a page of a group's connection table: the
// connections with ids above the request's after, in id order, at most
// limit of them; Next is the after of the next page (0: this was the
// last); Total counts every open connection of the group.
type ConnectionList struct {
	Connections []Connection `json:"connections"`
	Next        uint64       `json:"next,omitempty"`
	Total       int          `json:"total"`
}
