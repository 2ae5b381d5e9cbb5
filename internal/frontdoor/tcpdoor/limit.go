package tcpdoor

import (
	"net"

	"github.com/fulcrum-lb/fulcrum/internal/conntable"
)

// Bounds of the listener's connection cap (tcp.max_connections).
const (
	// DescriptorReserve are the descriptors the derived cap leaves to the
	// rest of the process (the admin API, the store, probes, logs).
	DescriptorReserve = 128
	// MaxDerivedConnections bounds the cap derived from an unlimited (or
	// huge) descriptor limit.
	MaxDerivedConnections = 10_000_000
	// fallbackConnections is the cap when the descriptor limit is unknown.
	fallbackConnections = 10_000
)

// DerivedMaxConnections is the cap of a listener whose group sets no
// tcp.max_connections, for a process allowed nofile descriptors: each
// proxied connection holds two (client and replica), and
// DescriptorReserve are kept for everything else; at least 1, at most
// MaxDerivedConnections. nofile 0 (unknown) gives 10000.
func DerivedMaxConnections(nofile uint64) int {
	if nofile == 0 {
		return fallbackConnections
	}
	if nofile <= 2*DescriptorReserve {
		return max(int(nofile/4), 1)
	}
	return int(min((nofile-DescriptorReserve)/2, MaxDerivedConnections))
}

// limitListener closes at once every connection accepted beyond the
// server's cap, counting it in the group's connection table, and hands
// the others to the accept loop: a flood is refused without a goroutine
// per connection, and the loop stays ready for the next accept.
type limitListener struct {
	net.Listener
	s *Server
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.s.admit() {
			return nc, nil
		}
		refuse(l.s.g.Snapshot(), conntable.RefuseMaxConnections)
		_ = nc.Close()
	}
}

// admit counts one more client connection unless the cap is reached.
func (s *Server) admit() bool {
	limit := int64(s.maxConnections())
	if s.active.Add(1) > limit {
		s.active.Add(-1)
		return false
	}
	return true
}

// maxConnections is the current snapshot's cap (derived when unset).
func (s *Server) maxConnections() int {
	if n := s.g.Snapshot().TCP.MaxConnections; n > 0 {
		return n
	}
	return s.derivedMax
}
