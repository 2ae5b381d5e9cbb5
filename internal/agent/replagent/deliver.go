package replagent

import (
	"context"
	"errors"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Deliverer hands ordered requests to the replica's server, one at a time.
type Deliverer interface {
	// Deliver sends req (at log position pos) to the server and returns its reply
	// (Position set). An error means the server did not answer (the agent stops:
	// the replica leaves the group; it never skips an entry).
	Deliver(ctx context.Context, pos uint64, req *protocol.OrderedRequest) (protocol.ReplicaReply, error)
	// State returns the server's state; ErrNoState (errors.Is) when the server cannot transfer state.
	State(ctx context.Context) ([]byte, error)
	// SetState replaces the server's state.
	SetState(ctx context.Context, state []byte) error
	// CanCheckpoint reports whether the server can transfer state (probed once at start).
	CanCheckpoint(ctx context.Context) bool
	Close() error
}

// ErrNoState is returned (wrapped) by Deliverer.State when the server cannot
// transfer its state.
var ErrNoState = errors.New("replagent: the server cannot transfer its state")
