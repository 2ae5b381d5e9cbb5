package balancer

import (
	"errors"
	"fmt"
)

// Sentinel errors; the admin API maps them to statuses with errors.Is.
var (
	// ErrUnknownGroup: no group of that name (404).
	ErrUnknownGroup = errors.New("balancer: unknown group")
	// ErrUnknownReplica: no replica of that id in the group (404).
	ErrUnknownReplica = errors.New("balancer: unknown replica")
	// ErrUnknownToken: the bearer token names no replica (401).
	ErrUnknownToken = errors.New("balancer: unknown replica token")
	// ErrFrontDoor: the front door address cannot be listened on (409).
	ErrFrontDoor = errors.New("balancer: front door unavailable")
	// ErrClosed: the balancer is shutting down (503).
	ErrClosed = errors.New("balancer: shutting down")
	// ErrNotRegistrar: a join token tried to replace a registration
	// another join token made (401).
	ErrNotRegistrar = errors.New("balancer: a join token may not replace a registration made with another join token")
)

// DuplicateAddressError is returned when a replica registers an address
// already in its group without "replace" (409).
type DuplicateAddressError struct {
	Group, Address, ExistingID string
}

func (e *DuplicateAddressError) Error() string {
	return fmt.Sprintf("balancer: address %s is already registered in group %s as replica %s (send \"replace\": true to take it over)", e.Address, e.Group, e.ExistingID)
}
