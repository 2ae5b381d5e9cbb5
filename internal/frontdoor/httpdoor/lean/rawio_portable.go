//go:build !linux

package lean

import "net"

// rawIO reads and writes a connection of the lean path; elsewhere than on
// Linux it is the net.Conn itself.
type rawIO struct{ nc net.Conn }

func newRawIO(nc net.Conn) *rawIO { return &rawIO{nc: nc} }

func (r *rawIO) Read(p []byte) (int, error)  { return r.nc.Read(p) }
func (r *rawIO) Write(p []byte) (int, error) { return r.nc.Write(p) }

// peek looks, without waiting or consuming, at what the connection holds.
func (r *rawIO) peek() peekState { return peekConn(r.nc) }
