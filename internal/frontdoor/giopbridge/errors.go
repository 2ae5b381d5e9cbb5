package giopbridge

import (
	"context"
	"errors"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
)

// Repository ids of the system exceptions the bridge raises besides those
// of package giop.
const (
	RepoIDMarshal    = "IDL:omg.org/CORBA/MARSHAL:1.0"
	RepoIDBadParam   = "IDL:omg.org/CORBA/BAD_PARAM:1.0"
	RepoIDImpLimit   = "IDL:omg.org/CORBA/IMP_LIMIT:1.0"
	RepoIDNoResponse = "IDL:omg.org/CORBA/NO_RESPONSE:1.0"
	RepoIDTimeout    = "IDL:omg.org/CORBA/TIMEOUT:1.0"
)

// exceptionFor maps an error of ordering a call to the system exception
// the client gets (see the package documentation's table).
func exceptionFor(err error) giop.SystemException {
	sys := func(id string, completed giop.CompletionStatus) giop.SystemException {
		return giop.SystemException{RepositoryID: id, Completed: completed}
	}
	var expired *replhub.ReplyExpiredError
	switch {
	case errors.Is(err, errUnknownKey):
		return giop.ObjectNotExist(0, giop.CompletedNo)
	case errors.Is(err, ordered.ErrMalformed), errors.Is(err, errMisaligned), errors.Is(err, errUnencodable):
		return sys(RepoIDMarshal, giop.CompletedNo)
	case errors.Is(err, replhub.ErrNoReplicas):
		return giop.Transient(0, giop.CompletedNo)
	case errors.Is(err, replog.ErrPayloadTooLarge):
		return sys(RepoIDImpLimit, giop.CompletedNo)
	case errors.Is(err, replog.ErrLogFull):
		return giop.Transient(giop.OMGVMCID|1, giop.CompletedNo)
	case errors.Is(err, replog.ErrBadSession):
		return sys(RepoIDBadParam, giop.CompletedNo)
	case errors.As(err, &expired):
		return sys(RepoIDNoResponse, giop.CompletedYes)
	case errors.Is(err, errBadReply):
		return sys(RepoIDMarshal, giop.CompletedYes)
	case errors.Is(err, context.DeadlineExceeded):
		return sys(RepoIDTimeout, giop.CompletedMaybe)
	default:
		// The log's own failures (unavailable, closed): nothing was
		// appended that the client cannot retry safely with FT_REQUEST.
		return giop.Transient(0, giop.CompletedNo)
	}
}
