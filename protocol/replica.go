package protocol

import "time"

// Replica states.
const (
	StateActive   = "active"
	StateDraining = "draining"
	StateEjected  = "ejected"
	StateDown     = "down"
)

// Replica is a registered member of a group, as persisted. Loads are soft
// state and live in the analyzer, not here.
type Replica struct {
	ID      string      `json:"id"`
	Group   string      `json:"group"`
	Address string      `json:"address"`
	Weight  float64     `json:"weight"`
	Monitor MonitorSpec `json:"monitor"`
	// Draining is the administrative state: no new bindings, bound clients
	// sent back. Down and ejected are health states and are not persisted.
	Draining bool `json:"draining,omitempty"`
	// Removing is set by DELETE: the replica drains and is removed once
	// idle, also after a restart.
	Removing bool `json:"removing,omitempty"`
	// Static is true for replicas declared in the config file.
	Static bool `json:"static,omitempty"`
	// TokenHash is the hex SHA-256 of the replica's token; the token itself
	// is never stored.
	TokenHash string `json:"token_hash"`
	// JoinTokenHash is the hex SHA-256 of the join token that registered
	// the replica, "" when the admin token did (or none was needed): that
	// join token, and no other, may remove the replica or replace its
	// registration.
	JoinTokenHash string    `json:"join_token_hash,omitempty"`
	Created       time.Time `json:"created"`
	// Workers is the worker count of a multi-process replica (registered
	// with a Worker, see Worker); 0 for a single-process one.
	Workers int `json:"workers,omitempty"`
}
