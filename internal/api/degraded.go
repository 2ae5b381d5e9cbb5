package api

import (
	"errors"
	"net/http"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// codeStoreUnavailable is the 503 of a write refused because the store
// (etcd) cannot be reached; the instance goes on serving from memory.
const codeStoreUnavailable = "store_unavailable"

// storeRetryAfter is the Retry-After of a store_unavailable answer, in
// seconds: about the store's check interval (etcdstore's ProbeInterval),
// after which a returned etcd is known to answer again.
const storeRetryAfter = "1"

// storeUnavailable answers 503 store_unavailable, with Retry-After, for
// an error wrapping store.ErrUnavailable, and reports whether it did. The
// message names etcd and its endpoints (the store's error does).
func storeUnavailable(w http.ResponseWriter, err error) bool {
	if !errors.Is(err, store.ErrUnavailable) {
		return false
	}
	w.Header().Set("Retry-After", storeRetryAfter)
	writeError(w, http.StatusServiceUnavailable, apiError{
		Code:    codeStoreUnavailable,
		Message: "not written: the store cannot be reached; this instance keeps serving from memory and refuses changes until it answers again: " + err.Error(),
	})
	return true
}

// storeNotReady answers /readyz's 503 while the store (etcd) cannot be
// reached, and reports whether it did. Reading the store's state costs
// nothing: the store checks etcd itself, once a second (etcdstore).
func (s *server) storeNotReady(w http.ResponseWriter) bool {
	err := s.b.StoreUnreachable()
	if err == nil {
		return false
	}
	writeError(w, http.StatusServiceUnavailable, apiError{Code: codeNotReady, Message: "not ready: the store cannot be reached (admin writes are refused; front doors keep serving): " + err.Error()})
	return true
}
