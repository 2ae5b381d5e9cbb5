// Package backend is the benchmarks' test services. Prime: "is n prime"
// by trial division (the TAO paper's CPU-bound call), the count of primes
// below x (the .NET Remoting paper's getPrimeCount) and an echo for payload
// benchmarks, over HTTP and GIOP. Counter and relay: the stateful tiers 3
// and 2 of the MEAD paper's three-tier test application, for replicated
// groups, with their state transfer (HTTP GET/PUT /fulcrum/state, GIOP
// FT::Checkpointable). docs/design.md lists the papers.
package backend

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Limits of the prime service's inputs.
const (
	// MaxPrimeN bounds /prime/{n}: trial division up to √n stays below a
	// few milliseconds.
	MaxPrimeN = 1 << 53
	// MaxCountX bounds /count/{x}: the sieve needs x bytes.
	MaxCountX = 100_000_000
	// MaxEchoBytes bounds POST /echo bodies.
	MaxEchoBytes = 16 << 20
)

// IsPrime reports whether n is prime, by trial division.
func IsPrime(n uint64) bool {
	if n < 2 {
		return false
	}
	if n%2 == 0 {
		return n == 2
	}
	for d := uint64(3); d*d <= n; d += 2 {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// PrimeCount returns the number of primes below x, by the sieve of
// Eratosthenes: CPU time proportional to x, as the .NET Remoting paper's getPrimeCount.
func PrimeCount(x int) int {
	if x <= 2 {
		return 0
	}
	composite := make([]bool, x)
	count := 0
	for i := 2; i < x; i++ {
		if composite[i] {
			continue
		}
		count++
		for j := i * i; j < x; j += i {
			composite[j] = true
		}
	}
	return count
}

// Prime is the prime service's HTTP handler.
type Prime struct {
	// ServedBy names this replica in answers (its replica id once
	// registered, its address before).
	ServedBy func() string
	mux      *http.ServeMux
}

// NewPrime returns the handler of the prime service.
func NewPrime(servedBy func() string) *Prime {
	p := &Prime{ServedBy: servedBy, mux: http.NewServeMux()}
	p.mux.HandleFunc("GET /prime/{n}", p.prime)
	p.mux.HandleFunc("GET /count/{x}", p.count)
	p.mux.HandleFunc("POST /echo", p.echo)
	(&objects{p: p}).register(p.mux) // objects.go
	p.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "served_by": p.ServedBy()})
	})
	return p
}

func (p *Prime) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

func (p *Prime) prime(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseUint(r.PathValue("n"), 10, 64)
	if err != nil || n > MaxPrimeN {
		badRequest(w, "n", r.PathValue("n"), fmt.Sprintf("must be an integer in [0, %d]", uint64(MaxPrimeN)))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"n": n, "prime": IsPrime(n), "served_by": p.ServedBy()})
}

func (p *Prime) count(w http.ResponseWriter, r *http.Request) {
	x, err := strconv.Atoi(r.PathValue("x"))
	if err != nil || x < 0 || x > MaxCountX {
		badRequest(w, "x", r.PathValue("x"), fmt.Sprintf("must be an integer in [0, %d]", MaxCountX))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"x": x, "count": PrimeCount(x), "served_by": p.ServedBy()})
}

func (p *Prime) echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxEchoBytes))
	if err != nil {
		badRequest(w, "body", "too large or unreadable", fmt.Sprintf("must be at most %d bytes", MaxEchoBytes))
		return
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

func badRequest(w http.ResponseWriter, field, value, allowed string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{
		"code": "invalid_argument", "field": field,
		"message": fmt.Sprintf("%s: invalid value %q, %s", field, value, allowed),
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
