package giop

import (
	"fmt"
	"strings"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// CompletionStatus says whether the call had run when a system exception
// was raised (CORBA::CompletionStatus).
type CompletionStatus uint32

// Completion statuses.
const (
	CompletedYes   CompletionStatus = 0
	CompletedNo    CompletionStatus = 1
	CompletedMaybe CompletionStatus = 2
)

var completionNames = [...]string{"COMPLETED_YES", "COMPLETED_NO", "COMPLETED_MAYBE"}

// String returns the spec's name, like "COMPLETED_NO".
func (c CompletionStatus) String() string {
	if int(c) < len(completionNames) {
		return completionNames[c]
	}
	return fmt.Sprintf("CompletionStatus(%d)", uint32(c))
}

// OMGVMCID is the vendor minor codeset id of minor codes the OMG defines:
// a standard minor code n is OMGVMCID | n.
const OMGVMCID uint32 = 0x4f4d0000

// Repository ids of the system exceptions the front door raises.
const (
	RepoIDObjectNotExist = "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0"
	RepoIDTransient      = "IDL:omg.org/CORBA/TRANSIENT:1.0"
)

// SystemException is the body of a SYSTEM_EXCEPTION reply,
// GIOP::SystemExceptionReplyBody (CORBA 3.x, GIOP chapter, "Reply Message" ›
// "Reply Body"). It implements error.
type SystemException struct {
	// RepositoryID names the exception, like RepoIDTransient.
	RepositoryID string
	Minor        uint32
	Completed    CompletionStatus
}

// ObjectNotExist returns OBJECT_NOT_EXIST: the object is gone for good (the
// front door's answer to a key that names no group).
func ObjectNotExist(minor uint32, completed CompletionStatus) SystemException {
	return SystemException{RepositoryID: RepoIDObjectNotExist, Minor: minor, Completed: completed}
}

// Transient returns TRANSIENT: try again later (the front door's answer when
// no replica can serve).
func Transient(minor uint32, completed CompletionStatus) SystemException {
	return SystemException{RepositoryID: RepoIDTransient, Minor: minor, Completed: completed}
}

// Name returns the exception's short name: "TRANSIENT" for
// "IDL:omg.org/CORBA/TRANSIENT:1.0".
func (x SystemException) Name() string {
	s := strings.TrimPrefix(x.RepositoryID, "IDL:")
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func (x SystemException) Error() string {
	return fmt.Sprintf("CORBA::%s (minor %#x, %v)", x.Name(), x.Minor, x.Completed)
}

func (x SystemException) encode(e *cdr.Encoder) {
	e.String(x.RepositoryID)
	e.ULong(x.Minor)
	e.ULong(uint32(x.Completed))
}

func decodeSystemException(d *cdr.Decoder) (SystemException, error) {
	var x SystemException
	x.RepositoryID = d.String("exception_id")
	x.Minor = d.ULong("minor_code_value")
	d.Align("completion_status", 4)
	at := d.Offset()
	x.Completed = CompletionStatus(d.ULong("completion_status"))
	if d.Err() == nil && x.Completed > CompletedMaybe {
		d.Fail("completion_status", at, cdr.ErrInvalid, "unknown completion status %d", uint32(x.Completed))
	}
	d.Done("completion_status")
	if err := d.Err(); err != nil {
		return SystemException{}, fmt.Errorf("giop: system exception: %w", err)
	}
	return x, nil
}
