package frontdoor

// Affinity is a group's session table as the TCP front door sees it
// (package affinity implements it; docs/affinity.md). The HTTP front
// doors use package affinity directly. Implementations are safe for
// concurrent use; RouteConn does not block.
type Affinity interface {
	// RouteConn says where a new connection from clientIP (the client's
	// IP address, from a trusted PROXY header when there was one) must go.
	RouteConn(clientIP string) AffinityDecision
	// Opened tells the table that the connection d was decided for is now
	// open to replica (creating a client-activated entry, or counting one
	// more open connection on it: an object is not idle while a
	// connection for it is open).
	Opened(d AffinityDecision, replica string)
	// Closed tells the table that the connection opened with d has ended.
	Closed(d AffinityDecision, replica string)
}

// AffinityDecision is where an affinity rule sends a call or connection.
type AffinityDecision struct {
	// Rule is the index of the matching rule (-1: none, single-call).
	Rule int
	// Kind is the rule's kind (protocol.Affinity*).
	Kind string
	// Key names the object.
	Key string
	// Replica is the id of the replica the call must go to; "" lets the
	// strategy pick. When that replica cannot take it on this instance
	// (not active here, or at its limit), the front door answers 503 or
	// refuses the connection: it never sends the call elsewhere.
	Replica string
	// Gone: the object was lost with its replica (client-activated); the
	// front door answers 410 Gone or refuses the connection.
	Gone bool
}
