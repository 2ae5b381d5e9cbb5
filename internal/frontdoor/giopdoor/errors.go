package giopdoor

import (
	"errors"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
)

// Repository ids of system exceptions the proxy raises besides those of
// package giop.
const (
	RepoIDCommFailure = "IDL:omg.org/CORBA/COMM_FAILURE:1.0"
	RepoIDTimeout     = "IDL:omg.org/CORBA/TIMEOUT:1.0"
)

var (
	// errCallTimeout: a proxied call got no reply within the group's
	// request timeout.
	errCallTimeout = errors.New("giopdoor: the replica did not answer within the request timeout")
	// errUpstreamLost: the connection to the replica ended after the call
	// was sent; it may have run.
	errUpstreamLost = errors.New("giopdoor: the connection to the replica failed after the call was sent")
	// errMisaligned: a GIOP 1.1 message whose fragments cannot be joined
	// without breaking the alignment of its body.
	errMisaligned = errors.New("giopdoor: GIOP 1.1 fragments that do not keep the body's alignment cannot be forwarded")
)

// exceptionFor maps an error to the system exception the client gets:
//
//   - a key naming no group: OBJECT_NOT_EXIST, COMPLETED_NO;
//   - no replica can serve: TRANSIENT minor 0, COMPLETED_NO (the client may
//     retry at once: nothing ran);
//   - every replica at its in-flight limit: TRANSIENT minor 1 (the OMG's
//     "request discarded because of resource exhaustion"), COMPLETED_NO;
//   - no reply within the request timeout: TIMEOUT, COMPLETED_MAYBE;
//   - the replica's connection lost after the call was sent: COMM_FAILURE,
//     COMPLETED_MAYBE.
func exceptionFor(err error) giop.SystemException {
	switch {
	case errors.Is(err, errUnknownKey):
		return giop.ObjectNotExist(0, giop.CompletedNo)
	case errors.Is(err, frontdoor.ErrOverloaded):
		return giop.Transient(giop.OMGVMCID|1, giop.CompletedNo)
	case errors.Is(err, errCallTimeout):
		return giop.SystemException{RepositoryID: RepoIDTimeout, Completed: giop.CompletedMaybe}
	case errors.Is(err, errUpstreamLost):
		return giop.SystemException{RepositoryID: RepoIDCommFailure, Completed: giop.CompletedMaybe}
	default:
		// frontdoor.ErrNoReplica, errNoReference, failed connects.
		return giop.Transient(0, giop.CompletedNo)
	}
}
