package balancer

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Registrations of multi-process replicas (protocol.Worker). The workers
// of one replica register the same address, each with its own index and
// the same count. The first registration creates the replica and records
// the count (protocol.Replica.Workers, persisted); a sibling's — same
// address, same count, any index — joins it: it gets the same id and
// token, answered 200, with or without "replace", and changes nothing
// else (weight, monitor and state stay). A registration that does not
// match the replica's kind is a *WorkerConflictError (409) unless it
// sets "replace", which then takes the replica over as any replace does
// (same id, fresh token, the registration's count or none):
//   - a worker count other than the stored one (worker.count);
//   - a worker registration for a single-process replica, or a
//     registration without worker for a multi-process one (worker).
//
// Tokens are stored hashed, so a join can answer the token only while
// the instance that issued it keeps it in memory (member.token). Where it
// does not (the instance restarted, or in a cluster another instance
// registered the replica), the join issues a fresh token with the same
// id, as replace does: siblings holding the older one are answered 401 on
// their next report and register again (the Go monitor does so by
// itself), which gets them the new one.

// WorkerConflictError is a registration whose worker (or lack of one)
// does not match the multi-process replica already registered at its
// address, without "replace".
type WorkerConflictError struct {
	Group, Address, ExistingID string
	// Field is "worker.count" (the counts differ) or "worker" (one side
	// has workers, the other none).
	Field string
	// Stored and Given are the replica's worker count and the
	// registration's (0: none).
	Stored, Given int
}

func (e *WorkerConflictError) Error() string {
	const hint = ` (send "replace": true to take the registration over)`
	switch {
	case e.Field == "worker.count":
		return fmt.Sprintf("balancer: %s: replica %s at %s in group %s has %d workers, the registration gives %d%s", e.Field, e.ExistingID, e.Address, e.Group, e.Stored, e.Given, hint)
	case e.Given == 0:
		return fmt.Sprintf("balancer: worker: replica %s at %s in group %s is a multi-process replica (%d workers), the registration has no worker%s", e.ExistingID, e.Address, e.Group, e.Stored, hint)
	default:
		return fmt.Sprintf("balancer: worker: replica %s at %s in group %s is a single-process replica, the registration gives worker.count %d%s", e.ExistingID, e.Address, e.Group, e.Given, hint)
	}
}

// validateWorkerRegistration checks a registration's worker: valid
// (protocol.Worker.Validate) and in push mode only. Errors are
// *protocol.FieldError.
func validateWorkerRegistration(reg protocol.Registration) error {
	if reg.Worker == nil {
		return nil
	}
	if err := reg.Worker.Validate(); err != nil {
		return err
	}
	if reg.Monitor.Mode == protocol.MonitorPull {
		return &protocol.FieldError{Field: "worker", Value: fmt.Sprintf("{index: %d, count: %d}", reg.Worker.Index, reg.Worker.Count), Allowed: "is only allowed with monitor mode push (each worker pushes its own reports)"}
	}
	return nil
}

// workerCount is a registration's worker count, 0 without worker.
func workerCount(reg protocol.Registration) int {
	if reg.Worker == nil {
		return 0
	}
	return reg.Worker.Count
}

// joinsWorkers decides a registration of an address already registered
// as existing: join reports a sibling worker joining the multi-process
// replica; otherwise err is what a registration without replace gets
// (nil with replace: the registration takes the replica over).
func joinsWorkers(group string, existing protocol.Replica, reg protocol.Registration) (join bool, err error) {
	given := workerCount(reg)
	switch {
	case given > 0 && given == existing.Workers:
		return true, nil
	case reg.Replace:
		return false, nil
	case given == 0 && existing.Workers == 0:
		return false, &DuplicateAddressError{Group: group, Address: reg.Address, ExistingID: existing.ID}
	}
	field := "worker"
	if given > 0 && existing.Workers > 0 {
		field = "worker.count"
	}
	return false, &WorkerConflictError{Group: group, Address: reg.Address, ExistingID: existing.ID, Field: field, Stored: existing.Workers, Given: given}
}

// joinTokenLocked is the token a joining sibling gets: the one m was
// last given, when this instance still knows it, or a fresh one (whose
// hash the caller stores) with fresh true. Caller holds g.mu.
func (m *member) joinTokenLocked() (token, hash string, fresh bool) {
	if m.token != "" && registry.TokenMatches(m.token, m.rec.TokenHash) {
		return m.token, m.rec.TokenHash, false
	}
	token, hash = registry.NewToken()
	return token, hash, true
}
