package ordered

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// ServiceTimeSeed is the service id of the bridge's time/seed context,
// protocol.GIOPServiceContextTimeSeed.
const ServiceTimeSeed = giop.ServiceID(protocol.GIOPServiceContextTimeSeed)

// TimeSeed is the bridge's stamp on an ordered request.
type TimeSeed struct {
	// Time is the request's time, UTC, between 1970 and 2262 (what
	// nanoseconds since the Unix epoch in an int64 can hold).
	Time time.Time
	// Seed seeds the servant's random source for the request.
	Seed uint64
}

// Encode returns s as service context data in byte order o. A time
// before the Unix epoch is written as the epoch.
func (s TimeSeed) Encode(o cdr.ByteOrder) []byte {
	e := cdr.NewEncoder(nil, o, 0)
	e.Octet(byte(o))
	e.ULongLong(uint64(max(s.Time.UnixNano(), 0)))
	e.ULongLong(s.Seed)
	return e.Bytes()
}

// DecodeTimeSeed decodes the data of a time/seed service context. It
// refuses nanoseconds beyond what an int64 holds and bytes left after the
// seed.
func DecodeTimeSeed(data []byte) (TimeSeed, error) {
	d, err := encapsulation(data, "time/seed")
	if err != nil {
		return TimeSeed{}, err
	}
	at := d.Offset()
	ns := d.ULongLong("nanoseconds")
	seed := d.ULongLong("seed")
	d.Done("seed")
	if err := d.Err(); err != nil {
		return TimeSeed{}, fmt.Errorf("%w: time/seed: %w", ErrMalformed, err)
	}
	if ns > math.MaxInt64 {
		return TimeSeed{}, fmt.Errorf("%w: time/seed: nanoseconds %d near offset %d: want at most %d (year 2262)", ErrMalformed, ns, at, int64(math.MaxInt64))
	}
	return TimeSeed{Time: time.Unix(0, int64(ns)).UTC(), Seed: seed}, nil
}

// SetTimeSeed replaces the time/seed contexts of req, if any, with one
// carrying s, last in the list, in req's byte order.
func SetTimeSeed(req *giop.Request, s TimeSeed) {
	list := slices.DeleteFunc(slices.Clone(req.ServiceContexts), func(sc giop.ServiceContext) bool { return sc.ID == ServiceTimeSeed })
	req.ServiceContexts = append(list, giop.ServiceContext{ID: ServiceTimeSeed, Data: s.Encode(req.Order)})
}
