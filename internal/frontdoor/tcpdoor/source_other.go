//go:build !linux

package tcpdoor

import "net"

// rawSource is unused off Linux: there each direction copies with
// io.Copy, which reads as bytes come.
type rawSource struct{}

func (s *rawSource) init(net.Conn) bool          { return false }
func (s *rawSource) read() (*[]byte, int, error) { return nil, 0, nil }
func (s *rawSource) waitReady() (int, error)     { return 0, nil }
