package store

import "errors"

// ErrUnavailable is wrapped by the errors of a store that cannot be reached
// (etcd down or cut off): the request may be tried again later. Whether a
// Txn that failed so applied is unknown (see Store.Txn's implementations).
var ErrUnavailable = errors.New("store: unavailable")

// Reachability is implemented by stores that can be unreachable (etcd; a
// bbolt file cannot). Callers use it to refuse a write at once, rather than
// after a request's timeout, while the store is known to be unreachable.
type Reachability interface {
	// Unreachable returns nil while the store is reachable (as far as its
	// last request or check tells), and otherwise an error wrapping
	// ErrUnavailable that names the store, its endpoints and the last
	// failure.
	Unreachable() error
}
