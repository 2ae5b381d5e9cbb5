package orb

import (
	"errors"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
)

// Repository ids of the system exceptions the ORB raises itself.
const (
	RepoIDCommFailure  = "IDL:omg.org/CORBA/COMM_FAILURE:1.0"
	RepoIDMarshal      = "IDL:omg.org/CORBA/MARSHAL:1.0"
	RepoIDInvObjref    = "IDL:omg.org/CORBA/INV_OBJREF:1.0"
	RepoIDBadInvOrder  = "IDL:omg.org/CORBA/BAD_INV_ORDER:1.0"
	RepoIDTimeout      = "IDL:omg.org/CORBA/TIMEOUT:1.0"
	RepoIDNoImplement  = "IDL:omg.org/CORBA/NO_IMPLEMENT:1.0"
	RepoIDUnknownError = "IDL:omg.org/CORBA/UNKNOWN:1.0"
)

// ErrClosed is the cause of the BAD_INV_ORDER raised by calls on a closed ORB.
var ErrClosed = errors.New("orb: closed")

// LocalError is a system exception raised by this ORB rather than received
// from a server: Exception says which, Err why. errors.As with a
// giop.SystemException target finds Exception; errors.Is finds Err's chain.
type LocalError struct {
	Exception giop.SystemException
	Err       error
}

func (e *LocalError) Error() string { return fmt.Sprintf("%v: %v", e.Exception, e.Err) }

// Unwrap returns the exception and the cause.
func (e *LocalError) Unwrap() []error { return []error{e.Exception, e.Err} }

func localError(repoID string, completed giop.CompletionStatus, format string, args ...any) *LocalError {
	return &LocalError{
		Exception: giop.SystemException{RepositoryID: repoID, Completed: completed},
		Err:       fmt.Errorf(format, args...),
	}
}

// transient is TRANSIENT, COMPLETED_NO: nothing was sent.
func transient(format string, args ...any) *LocalError {
	return localError(giop.RepoIDTransient, giop.CompletedNo, format, args...)
}

// commFailure is COMM_FAILURE: the connection broke; completed says
// whether the call may have run.
func commFailure(completed giop.CompletionStatus, format string, args ...any) *LocalError {
	return localError(RepoIDCommFailure, completed, format, args...)
}

func marshal(format string, args ...any) *LocalError {
	return localError(RepoIDMarshal, giop.CompletedMaybe, format, args...)
}
