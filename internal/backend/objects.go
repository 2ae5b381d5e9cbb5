package backend

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// MaxObjects bounds the objects (client-activated and singleton) one
// prime replica keeps; a creation beyond it is a 503.
const MaxObjects = 1 << 20

// objects is the prime service's stateful part, for the stateful cases
// of the .NET Remoting experiment (Chen et al.; docs/affinity.md): the
// objects of the two stateful kinds of .NET Remoting, each counting the
// calls it served, so that a client can tell whether its calls reached
// the replica that holds the object.
//
//	POST /objects               create a client-activated object: 201, Location /objects/{id}
//	GET  /objects/{id}?x=N      call it (getPrimeCount(N)); 404 when this replica does not hold it
//	GET  /singletons/{name}?x=N call the singleton name (created at its first call)
//	GET  /objects               every object this replica holds, with its calls
//
// Answers are JSON with served_by (the replica's id) and the object's
// calls so far, this one included.
type objects struct {
	p *Prime

	mu         sync.Mutex
	activated  map[string]int64 // client-activated object id → calls
	singletons map[string]int64 // singleton name → calls
}

func (o *objects) register(mux *http.ServeMux) {
	o.activated, o.singletons = map[string]int64{}, map[string]int64{}
	mux.HandleFunc("POST /objects", o.create)
	mux.HandleFunc("GET /objects/{id}", o.call)
	mux.HandleFunc("GET /singletons/{name}", o.singleton)
	mux.HandleFunc("GET /objects", o.list)
}

// xOf reads ?x= (default 0); ok is false after a 400 was written.
func xOf(w http.ResponseWriter, r *http.Request) (x int, ok bool) {
	v := r.URL.Query().Get("x")
	if v == "" {
		return 0, true
	}
	x, err := strconv.Atoi(v)
	if err != nil || x < 0 || x > MaxCountX {
		badRequest(w, "x", v, fmt.Sprintf("must be an integer in [0, %d]", MaxCountX))
		return 0, false
	}
	return x, true
}

func (o *objects) create(w http.ResponseWriter, r *http.Request) {
	id := strings.ToLower(rand.Text())
	o.mu.Lock()
	full := len(o.activated)+len(o.singletons) >= MaxObjects
	if !full {
		o.activated[id] = 0
	}
	o.mu.Unlock()
	if full {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": fmt.Sprintf("this replica holds %d objects, the most it keeps", MaxObjects), "served_by": o.p.ServedBy()})
		return
	}
	w.Header().Set("Location", "/objects/"+id)
	writeJSON(w, http.StatusCreated, map[string]any{"id": id, "served_by": o.p.ServedBy()})
}

func (o *objects) call(w http.ResponseWriter, r *http.Request) {
	x, ok := xOf(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	o.mu.Lock()
	n, held := o.activated[id]
	if held {
		n++
		o.activated[id] = n
	}
	o.mu.Unlock()
	if !held {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": fmt.Sprintf("object %q is not on this replica", id), "served_by": o.p.ServedBy()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "calls": n, "count": PrimeCount(x), "served_by": o.p.ServedBy()})
}

func (o *objects) singleton(w http.ResponseWriter, r *http.Request) {
	x, ok := xOf(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	o.mu.Lock()
	n, held := o.singletons[name]
	full := !held && len(o.activated)+len(o.singletons) >= MaxObjects
	if !full {
		n++
		o.singletons[name] = n
	}
	o.mu.Unlock()
	if full {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": fmt.Sprintf("this replica holds %d objects, the most it keeps", MaxObjects), "served_by": o.p.ServedBy()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "calls": n, "count": PrimeCount(x), "served_by": o.p.ServedBy()})
}

// ObjectCounts is GET /objects's answer: the calls each object held
// here has served.
type ObjectCounts struct {
	ServedBy   string           `json:"served_by"`
	Objects    map[string]int64 `json:"objects"`
	Singletons map[string]int64 `json:"singletons"`
}

func (o *objects) list(w http.ResponseWriter, _ *http.Request) {
	o.mu.Lock()
	out := ObjectCounts{ServedBy: o.p.ServedBy(), Objects: make(map[string]int64, len(o.activated)), Singletons: make(map[string]int64, len(o.singletons))}
	for k, v := range o.activated {
		out.Objects[k] = v
	}
	for k, v := range o.singletons {
		out.Singletons[k] = v
	}
	o.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}
