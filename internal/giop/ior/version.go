package ior

import "strconv"

// Version is an IIOP version, as carried by an IIOP profile and a corbaloc
// address (CORBA 3.x, GIOP chapter, "IIOP IOR Profiles"). It bounds the GIOP
// version a client may speak to that address.
type Version struct {
	Major, Minor uint8
}

// The IIOP versions in use.
var (
	V10 = Version{1, 0}
	V11 = Version{1, 1}
	V12 = Version{1, 2}
)

// String returns "major.minor".
func (v Version) String() string {
	return strconv.Itoa(int(v.Major)) + "." + strconv.Itoa(int(v.Minor))
}
