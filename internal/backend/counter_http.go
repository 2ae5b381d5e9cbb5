package backend

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Headers of the determinism contract: a replicated group's bridge stamps
// each ordered request with them (issue 24, docs/replication.md) so that
// every replica uses the same time and the same random numbers.
const (
	// HeaderTime is the request's time, RFC 3339 with nanoseconds, UTC.
	HeaderTime = "Fulcrum-Time"
	// HeaderSeed is the request's random seed, a decimal uint64.
	HeaderSeed = "Fulcrum-Seed"
)

// StateContentType is the content type of GET and PUT /fulcrum/state.
const StateContentType = "application/json"

// CounterOptions configure the counter and relay handlers. The zero value
// uses the real clock and a random source of the process.
type CounterOptions struct {
	// Now is the clock used when a request has no Fulcrum-Time (default
	// time.Now).
	Now func() time.Time
	// Rand draws an addition's id when a request has no Fulcrum-Seed
	// (default math/rand/v2's Uint64).
	Rand func() uint64
}

func (o CounterOptions) withDefaults() CounterOptions {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Uint64
	}
	return o
}

// stamp is the Stamp of r: Fulcrum-Time and Fulcrum-Seed when present (the
// id is the first number of a PCG seeded with the seed), the clock and the
// random source otherwise. A malformed header is an error naming it.
func (o CounterOptions) stamp(r *http.Request) (Stamp, error) {
	var s Stamp
	if v := r.Header.Get(HeaderTime); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err == nil {
			err = checkStampTime(t)
		}
		if err != nil {
			return s, fmt.Errorf("header %s: invalid value %q, must be an RFC 3339 time such as 2026-11-27T10:00:00.123456789Z", HeaderTime, v)
		}
		s.Time = t
	} else {
		s.Time = o.Now()
	}
	if v := r.Header.Get(HeaderSeed); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("header %s: invalid value %q, must be a decimal integer in [0, 2^64)", HeaderSeed, v)
		}
		s.ID = rand.New(rand.NewPCG(seed, 0)).Uint64()
	} else {
		s.ID = o.Rand()
	}
	return s, nil
}

// incrementBy is the by query parameter of POST /increment: 1 when absent.
func incrementBy(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("by")
	if v == "" && !r.URL.Query().Has("by") {
		return 1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > MaxIncrementBy {
		return 0, fmt.Errorf("by: invalid value %q, must be an integer in [1, %d]", v, int64(MaxIncrementBy))
	}
	return n, nil
}

// NewCounterHandler returns tier 3 of seed 001's test application over
// HTTP, a stateful counter:
//
//	POST /increment[?by=K]  adds K (default 1, at most MaxIncrementBy) → {"value": n}
//	GET  /value             → {"value": n, "increments": k}
//	GET  /fulcrum/state     → the state (CounterState's JSON, StateContentType)
//	PUT  /fulcrum/state     replaces the state with the body → 204
//	GET  /healthz           → {"status": "ok"}
//
// Answers carry nothing that differs between replicas (no served_by), so
// that the replies of replicas that applied the same requests are equal
// byte for byte. c is the state; the handler is safe for concurrent use.
func NewCounterHandler(c *Counter, opts CounterOptions) http.Handler {
	opts = opts.withDefaults()
	mux := stateMux(c)
	mux.HandleFunc("POST /increment", func(w http.ResponseWriter, r *http.Request) {
		by, err := incrementBy(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_argument", "by", err.Error())
			return
		}
		s, err := opts.stamp(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_argument", "header", err.Error())
			return
		}
		st, err := c.Add(by, s)
		if err != nil {
			writeError(w, http.StatusConflict, "overflow", "by", err.Error())
			return
		}
		// Fault injection point (1) of the MEAD paper's experiments: the
		// server dies after reading a request, before replying (package
		// failpoint; only the failpoint build has this code).
		// gofail: var counterHTTPBeforeReply struct{}
		// failpoint.Kill()
		writeJSON(w, http.StatusOK, map[string]int64{"value": st.Value})
	})
	return mux
}

// stateMux serves GET /value, GET and PUT /fulcrum/state and GET /healthz
// of c: what the counter and the relay have in common.
func stateMux(c *Counter) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /value", func(w http.ResponseWriter, _ *http.Request) {
		st := c.State()
		writeJSON(w, http.StatusOK, map[string]any{"value": st.Value, "increments": st.Increments})
	})
	mux.HandleFunc("GET /fulcrum/state", func(w http.ResponseWriter, _ *http.Request) {
		b := MarshalCounterState(c.State())
		w.Header().Set("Content-Type", StateContentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	})
	mux.HandleFunc("PUT /fulcrum/state", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxStateBytes))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, "too_large", "body", fmt.Sprintf("body: more than %d bytes, a counter state is at most %d", MaxStateBytes, MaxStateBytes))
				return
			}
			writeError(w, http.StatusBadRequest, "invalid_state", "body", fmt.Sprintf("body: unreadable: %v", err))
			return
		}
		st, err := ParseCounterState(b)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_state", "body", err.Error())
			return
		}
		c.Restore(st)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return mux
}

// writeError answers status with fulcrum's error shape.
func writeError(w http.ResponseWriter, status int, code, field, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "field": field, "message": message}})
}
