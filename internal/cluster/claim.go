package cluster

import (
	"fmt"
	"time"
)

// ExpiryGrace is added to a holder's lease TTL when waiting for its entry
// to expire: etcd checks for expired leases twice a second, and revokes
// them through its log.
const ExpiryGrace = time.Second

// claimDecision is what an instance starting with a name does about the
// key that holds it.
type claimDecision int

const (
	// claimCreate: nobody holds the name; create the entry.
	claimCreate claimDecision = iota
	// claimOurs: the key is on this instance's own lease already.
	claimOurs
	// claimWait: another lease holds it; wait for it to expire.
	claimWait
	// claimRefuse: another lease still holds it after the wait.
	claimRefuse
)

// decideClaim decides about a name: held tells whether its key exists,
// holderLease and own are the key's lease and this instance's (0: none
// yet), and waitOver whether the wait for the holder's lease to expire
// has ended.
func decideClaim(held bool, holderLease, own int64, waitOver bool) claimDecision {
	switch {
	case !held:
		return claimCreate
	case own != 0 && holderLease == own:
		return claimOurs
	case !waitOver:
		return claimWait
	}
	return claimRefuse
}

// claimWaitFor is how long to wait for a held name's key to go: the
// holder lease's TTL as granted (own, this instance's session TTL, when
// it is not known), and ExpiryGrace.
func claimWaitFor(holderTTL, own time.Duration) time.Duration {
	if holderTTL <= 0 {
		holderTTL = own
	}
	return holderTTL + ExpiryGrace
}

// NameTakenError says that a live instance holds the name this instance
// was to start with.
type NameTakenError struct {
	Name string
	// AdminURL is the holder's admin URL ("" when its entry cannot be
	// decoded).
	AdminURL string
	// Waited is how long the key was waited on.
	Waited time.Duration
}

func (e *NameTakenError) Error() string {
	at := e.AdminURL
	if at == "" {
		at = "(admin URL unknown: its entry cannot be decoded)"
	}
	return fmt.Sprintf("cluster: instance name %q is held by a live instance at %s (its entry did not expire within %v); give this instance another instance.name, or stop that one",
		e.Name, at, e.Waited.Round(100*time.Millisecond))
}
