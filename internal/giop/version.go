package giop

import "strconv"

// Version is a GIOP protocol version (GIOP::Version). The codec speaks 1.0,
// 1.1 and 1.2.
type Version struct {
	Major, Minor uint8
}

// The GIOP versions the codec supports.
var (
	V10 = Version{1, 0}
	V11 = Version{1, 1}
	V12 = Version{1, 2}
)

// Highest is the newest version supported: the one to answer a message of an
// unsupported version in (CORBA 3.x, GIOP chapter, "GIOP Message Header").
var Highest = V12

// Supported reports whether v is 1.0, 1.1 or 1.2.
func (v Version) Supported() bool { return v.Major == 1 && v.Minor <= 2 }

// String returns "major.minor".
func (v Version) String() string {
	return strconv.Itoa(int(v.Major)) + "." + strconv.Itoa(int(v.Minor))
}

// atLeast reports whether v is minor version m of GIOP 1 or later.
func (v Version) atLeast(m uint8) bool { return v.Minor >= m }
