package protocol

import "time"

// Affinity rule kinds (AffinityRule.Kind): the three kinds of .NET
// Remoting objects as a session table keeps them (docs/affinity.md).
const (
	// AffinitySingleCall balances each call (HTTP) or connection (TCP) on
	// its own; the default for calls no rule matches.
	AffinitySingleCall = "single-call"
	// AffinitySingleton sends every call for a key (or, in a tcp group,
	// every connection) to one replica, chosen by rendezvous hashing over
	// the live replicas: the hash order is the failover ranking, so every
	// instance of a cluster agrees without sharing state.
	AffinitySingleton = "singleton"
	// AffinityClientActivated pins an object created by a call (HTTP: the
	// Location of a 201, or a cookie the replica sets; TCP: the client's
	// address) to the replica that created it until it has been idle for
	// the rule's timeout. When its replica dies, calls for the object get
	// 410 Gone (HTTP) or a refused connection (TCP).
	AffinityClientActivated = "client-activated"
)

// AffinityRule says which calls of a group must stay together. It applies
// to tcp groups and to per-request http groups. A tcp group has at most
// one rule, which covers every connection (Match, Key and Cookie empty).
type AffinityRule struct {
	// Kind is single-call, singleton or client-activated.
	Kind string `json:"kind" yaml:"kind"`
	// Match is an http.ServeMux pattern ("[METHOD ][HOST]/PATH", with
	// wildcards such as /objects/{name}/{rest...}) naming the calls the
	// rule covers (http groups; required there). Of two rules matching a
	// call, the more specific pattern wins, as in ServeMux; two patterns
	// that ServeMux cannot order, or equal ones, are a config error.
	Match string `json:"match,omitempty" yaml:"match,omitempty"`
	// Key is the wildcard of Match whose value names the object; default
	// the pattern's first wildcard. A singleton rule without wildcards
	// keys every call it matches to one replica.
	Key string `json:"key,omitempty" yaml:"key,omitempty"`
	// Cookie (client-activated, http) names the object by this cookie,
	// which the replica that creates the object sets: later calls
	// carrying it go to that replica. Without Cookie, an object is created
	// by a 201 answer whose Location path matches Match.
	Cookie string `json:"cookie,omitempty" yaml:"cookie,omitempty"`
	// Timeout (client-activated) is how long an object may be idle (no
	// call for it, or in a tcp group no connection open) before its entry
	// expires; default 5m, range [1s, 24h]. In cluster mode entries live
	// in etcd on a lease of Timeout rounded up to whole seconds (at least
	// 2s).
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// MaxEntries bounds the rule's entries on one instance (least
	// recently used evicted first); default 100000, range [1, 10000000].
	MaxEntries int `json:"max_entries,omitempty" yaml:"max_entries,omitempty"`
}

// SessionEntry is one client-activated entry of a group's session table
// (GET /v1/groups/{name}/sessions).
type SessionEntry struct {
	// Rule is the index of the rule in the group's affinity list.
	Rule int `json:"rule"`
	// Key names the object (the wildcard's value, the cookie's value or
	// the client's address).
	Key string `json:"key"`
	// Replica is the id of the replica that created the object.
	Replica string `json:"replica"`
	// Created is when the entry was made, LastUsed the last call or
	// connection for it, Expires when it expires if no call comes.
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	Expires  time.Time `json:"expires"`
}

// SessionList is a page of a group's session table, ordered by rule then
// key; Next is the after token of the next page ("" when this was the
// last); Total counts the entries this instance holds.
type SessionList struct {
	Sessions []SessionEntry `json:"sessions"`
	Next     string         `json:"next,omitempty"`
	Total    int            `json:"total"`
}
