package balancer

import (
	"errors"
	"fmt"
	"strconv"
)

// Concurrent changes to a group's settings (the API's ETag and If-Match).
//
// A group's revision is the store revision its record was last written at
// (package groupstore): every PUT, PATCH and config apply of the group
// changes it; replica registrations, removals, weights, drains, blocks and
// load reports do not (they are other records), so monitors never make an
// admin's write fail. Every write of a group's record is one store
// transaction conditioned on the revision it was decided from; when
// another writer got there first (another instance sharing the store) the
// in-memory change is undone and the write is tried again on the new
// revision, up to writeAttempts times, unless the caller asked for a
// revision (Match.Rev), which then fails with a *RevisionError. On this
// instance adminMu serialises the writes of settings, so that the check,
// the in-memory change and the store write of one are never interleaved
// with another's.

// writeAttempts bounds the tries of a write whose store transaction found
// the group's record changed by another writer.
const writeAttempts = 5

// ErrRevisionMismatch is wrapped by a *RevisionError (412
// revision_mismatch).
var ErrRevisionMismatch = errors.New("balancer: revision mismatch")

// Match is a write's precondition on the group's revision (If-Match). The
// zero Match imposes none.
type Match struct {
	// Rev, when not 0, is the revision the group's record must be at.
	Rev int64
	// Any requires the group to exist (If-Match: *).
	Any bool
	// None requires the group not to exist (If-None-Match: *): a PUT
	// that only creates.
	None bool
}

// holds tells whether m holds for a group at revision cur (0: absent).
func (m Match) holds(cur int64) bool {
	return (!m.Any || cur != 0) && (m.Rev == 0 || m.Rev == cur) && (!m.None || cur == 0)
}

func (m Match) String() string {
	if m.Any {
		return "*"
	}
	return strconv.Quote(strconv.FormatInt(m.Rev, 10))
}

// RevisionError is a write whose Match did not hold. It wraps
// ErrRevisionMismatch.
type RevisionError struct {
	Group string
	Match Match
	// Current is the group's revision (0: the group does not exist).
	Current int64
}

func (e *RevisionError) Error() string {
	if e.Match.None && e.Current != 0 {
		return fmt.Sprintf("balancer: group %s already exists (If-None-Match: *)", e.Group)
	}
	if e.Current == 0 {
		return fmt.Sprintf("balancer: group %s does not exist (If-Match: %s)", e.Group, e.Match)
	}
	return fmt.Sprintf("balancer: group %s is at revision %d (If-Match: %s)", e.Group, e.Current, e.Match)
}

func (e *RevisionError) Unwrap() error { return ErrRevisionMismatch }
