package protocol

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
)

// MaxWorkers bounds Worker.Count.
const MaxWorkers = 1024

// Worker names one process of a multi-process replica (gunicorn or
// uvicorn workers, a Go server forked per core): the workers of one
// replica register the same address, each with its own Index and the
// same Count, and share one replica id and token. The first worker's
// registration creates the replica; a sibling's (same address, another
// index, same count) joins it and gets the same id and token, without
// Replace. Each worker reports on its own; the balancer combines the
// latest report of each worker (docs/api.md "Multi-process replicas"):
// it sums load, inflight, rps, eps, cpu, cpu_other, bw and each client's
// rate, and averages latency_ms and utilization weighted by rps.
type Worker struct {
	// Index is this worker's number, 0 <= Index < Count.
	Index int `json:"index"`
	// Count is the number of workers of the replica, 1..MaxWorkers.
	Count int `json:"count"`
}

// Validate checks a decoded worker; errors are *FieldError naming
// "worker.index" or "worker.count".
func (w Worker) Validate() error {
	if w.Count < 1 || w.Count > MaxWorkers {
		return &FieldError{Field: "worker.count", Value: w.Count, Allowed: fmt.Sprintf("must be a whole number in [1, %d]", MaxWorkers)}
	}
	if w.Index < 0 || w.Index >= w.Count {
		return &FieldError{Field: "worker.index", Value: w.Index, Allowed: fmt.Sprintf("must be a whole number in [0, %d] (worker.count - 1)", w.Count-1)}
	}
	return nil
}

// ClientHash is the 64-bit FNV-1a hash of a client id's bytes.
func ClientHash(clientID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(clientID)) // a hash.Hash never fails to write
	return h.Sum64()
}

// WorkerOf is the worker of a count-worker replica that owns a client:
// ClientHash(clientID) % count. An advisory reaches every worker; worker
// i sends a named client back only if WorkerOf(client, count) == i, so
// that each client is sent back once. count < 1 is taken as 1.
func WorkerOf(clientID string, count int) int {
	if count < 1 {
		return 0
	}
	return int(ClientHash(clientID) % uint64(count))
}

// DecodeWorker decodes and validates a JSON worker object {"index": i,
// "count": n}: both keys required, whole numbers, no other keys. Errors
// are *FieldError naming "worker", "worker.index" or "worker.count".
func DecodeWorker(raw json.RawMessage) (Worker, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return Worker{}, &FieldError{Field: "worker", Value: jsonText(raw), Allowed: `must be an object {"index": i, "count": n}`}
	}
	if err := knownKeys("worker.", obj, "index", "count"); err != nil {
		return Worker{}, err
	}
	var w Worker
	for _, f := range []struct {
		key string
		dst *int
	}{{"index", &w.Index}, {"count", &w.Count}} {
		v, ok := obj[f.key]
		if !ok {
			return Worker{}, &FieldError{Field: "worker." + f.key, Value: nil, Allowed: "is required: a whole number"}
		}
		if err := json.Unmarshal(v, f.dst); err != nil || string(v) == "null" {
			return Worker{}, &FieldError{Field: "worker." + f.key, Value: jsonText(v), Allowed: "must be a whole number"}
		}
	}
	return w, w.Validate()
}
