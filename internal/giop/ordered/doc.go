// Package ordered is what a GIOP Request needs to travel through a
// replicated group's log (docs/replication.md): the two service contexts
// involved and the re-encoding of a request whose header the bridge or the
// agent changed.
//
//   - FT_REQUEST (IOP::FT_REQUEST, service id 13; CORBA 3.x, Fault
//     Tolerant CORBA chapter, FT::FTRequestServiceContext): a fault-tolerant
//     client's identity of a request, {string client_id; long retention_id;
//     TimeBase::TimeT expiration_time}. The bridge deduplicates by it:
//     client_id is the session and retention_id the sequence number.
//   - Time/seed (protocol.GIOPServiceContextTimeSeed, a vendor id, "FLC" +
//     0x01): the bridge's determinism stamps, {unsigned long long
//     nanoseconds since the Unix epoch (UTC); unsigned long long seed}.
//     Servants use them instead of their clock and random source, as HTTP
//     servers use Fulcrum-Time and Fulcrum-Seed.
//
// Both are CDR encapsulations (their first octet names their byte order).
// Decoding never panics; errors name the field and its offset within the
// context data and wrap ErrMalformed.
//
// Encode writes a Request after its header changed (a service context
// added, the target key or the request id rewritten) without breaking the
// alignment of its opaque body. The body's alignment is relative to the
// message start; GIOP 1.2 bodies start 8-aligned, so any header change is
// harmless there, but GIOP 1.0 and 1.1 bodies follow the header directly.
// For those Encode pads the requesting_principal (an octet sequence that
// precedes the body and that ORBs ignore) with up to seven zero octets so
// that the body keeps its offset modulo 8.
//
// Usage, in a bridge:
//
//	data, ok := giop.FindServiceContext(req.ServiceContexts, ordered.ServiceFTRequest)
//	if ok {
//		ft, err := ordered.DecodeFTRequest(data)
//		...
//	}
//	ordered.SetTimeSeed(req, ordered.TimeSeed{Time: now, Seed: seed})
//	b, err := ordered.Encode(req)
package ordered
