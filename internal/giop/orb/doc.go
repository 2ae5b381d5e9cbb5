// Package orb is a small CORBA client ORB for fulcrum's benches, demo and
// tests: it resolves "corbaloc:iiop:" and "IOR:" references, keeps one
// connection per endpoint (calls from many goroutines are multiplexed on it
// by request id), sends GIOP 1.2 requests (1.0 and 1.1 on request, never
// above the version the target's IIOP profile advertises), and follows
// forwards the way a standard ORB does (CORBA 3.x, GIOP chapter, "Object
// Location"; the TAO paper §3.3.1):
//
//   - A Reply with LOCATION_FORWARD, or a LocateReply with OBJECT_FORWARD,
//     makes the object use the reference it carries from then on, until it is
//     forwarded again. The call is re-issued there.
//   - LOCATION_FORWARD_PERM and OBJECT_FORWARD_PERM replace the object's
//     reference for good.
//   - When the connection to a forwarded reference fails, the object reverts
//     to its original reference (as omniORB does), so the next call goes
//     back to the balancer's front door. A call that had not been sent is
//     re-issued there at once, once at most; a call that had been sent fails
//     with COMM_FAILURE (COMPLETED_MAYBE), since it may have run.
//
// A reference may list several addresses: several IIOP profiles (a
// multi-address corbaloc URL) or TAG_ALTERNATE_IIOP_ADDRESS components.
// When the address an object uses cannot be connected to, the call tries
// the next ones in order (nothing was sent, so nothing runs twice), and the
// object keeps to the address that answered. A call fails with TRANSIENT
// only when no address can be connected to.
//
// With Options.Locate the ORB sends a LocateRequest before the first call on
// each new target, as omniORB does by default.
//
// Errors are typed: a SYSTEM_EXCEPTION reply is a giop.SystemException, and
// the exceptions the ORB raises itself (TRANSIENT when it cannot connect,
// COMM_FAILURE when a connection breaks, MARSHAL, ...) are *LocalError,
// which also matches giop.SystemException with errors.As:
//
//	o, err := orb.New(orb.Options{})
//	if err != nil { ... }
//	defer o.Close()
//	obj, err := o.Resolve("corbaloc:iiop:1.2@127.0.0.1:2809/prime")
//	if err != nil { ... }
//	prime := orb.Prime{Object: obj}
//	yes, err := prime.IsPrime(ctx, 1_000_003)
//	var ex giop.SystemException
//	if errors.As(err, &ex) && ex.Name() == "TRANSIENT" { ... }
package orb
