package client_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

const testGroup = "g"

// fakeReplica is a real HTTP server standing in for a replica. It counts
// the calls it runs and keeps what they carried.
type fakeReplica struct {
	id  string
	srv *httptest.Server
	// prefix is the replica's base path ("" or e.g. "/api").
	prefix string
	// frontDoor is where rebinds point.
	frontDoor string

	// rebinds is how many of the next bound calls to send back.
	rebinds atomic.Int64
	// rebindOnce, when set, sends back a bound call whose query has
	// rebind=KEY, once per KEY across the replicas sharing the map.
	rebindOnce *sync.Map
	// unavailable is how many of the next calls to answer 503 (they run).
	unavailable atomic.Int64
	// crash makes every call run and then drop the connection unanswered.
	crash atomic.Bool
	// wrapped, when set, serves in place of serve (it wraps it).
	wrapped atomic.Pointer[http.Handler]

	mu   sync.Mutex
	runs []call
}

// call is one call a replica ran.
type call struct {
	Path    string
	Body    string
	Binding string
	Client  string
}

func newFakeReplica(t *testing.T, id, prefix string) *fakeReplica {
	t.Helper()
	r := &fakeReplica{id: id, prefix: prefix}
	r.srv = httptest.NewServer(http.HandlerFunc(r.dispatch))
	t.Cleanup(r.srv.Close)
	return r
}

// wrap puts middleware in front of the replica's handler.
func (r *fakeReplica) wrap(mw func(http.Handler) http.Handler) {
	h := mw(http.HandlerFunc(r.serve))
	r.wrapped.Store(&h)
}

func (r *fakeReplica) dispatch(w http.ResponseWriter, req *http.Request) {
	if h := r.wrapped.Load(); h != nil {
		(*h).ServeHTTP(w, req)
		return
	}
	r.serve(w, req)
}

// base is the replica's base URL, as registered.
func (r *fakeReplica) base() string { return r.srv.URL + r.prefix }

func (r *fakeReplica) serve(w http.ResponseWriter, req *http.Request) {
	binding := req.Header.Get(protocol.HeaderBinding)
	if binding != "" {
		sendBack := false
		if r.rebinds.Add(-1) >= 0 {
			sendBack = true
		} else {
			r.rebinds.Store(0)
		}
		if key := req.URL.Query().Get("rebind"); key != "" && r.rebindOnce != nil {
			if _, done := r.rebindOnce.LoadOrStore(key, true); !done {
				sendBack = true
			}
		}
		if sendBack {
			w.Header().Set("Location", r.frontDoor+req.URL.RequestURI())
			w.Header().Set(protocol.HeaderRebind, "1")
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
	}
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.runs = append(r.runs, call{Path: req.URL.RequestURI(), Body: string(body), Binding: binding, Client: req.Header.Get(protocol.HeaderClient)})
	r.mu.Unlock()
	if r.crash.Load() {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	if r.unavailable.Add(-1) >= 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	r.unavailable.Store(0)
	w.Header().Set("Served-By", r.id)
	_, _ = io.WriteString(w, r.id+":"+string(body))
}

func (r *fakeReplica) ran() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.runs...)
}

// fakeFrontDoor is a real HTTP server standing in for an on-demand front
// door: it answers 307 to the replica pick chooses.
type fakeFrontDoor struct {
	srv *httptest.Server
	// unavailable is how many of the next requests to answer 503.
	unavailable atomic.Int64

	mu      sync.Mutex
	pick    func(n int) *fakeReplica
	hits    int
	clients []string
	// hints are the Fulcrum-Rebind and Fulcrum-Binding each request came
	// with, as "rebind binding".
	hints []string
}

func newFakeFrontDoor(t *testing.T, replicas ...*fakeReplica) *fakeFrontDoor {
	t.Helper()
	fd := &fakeFrontDoor{}
	fd.pick = func(n int) *fakeReplica { return replicas[n%len(replicas)] }
	fd.srv = httptest.NewServer(http.HandlerFunc(fd.serve))
	t.Cleanup(fd.srv.Close)
	for _, r := range replicas {
		r.frontDoor = fd.srv.URL
	}
	return fd
}

func (fd *fakeFrontDoor) serve(w http.ResponseWriter, req *http.Request) {
	fd.mu.Lock()
	n := fd.hits
	fd.hits++
	fd.clients = append(fd.clients, req.Header.Get(protocol.HeaderClient))
	fd.hints = append(fd.hints, req.Header.Get(protocol.HeaderRebind)+" "+req.Header.Get(protocol.HeaderBinding))
	pick := fd.pick
	fd.mu.Unlock()
	if fd.unavailable.Add(-1) >= 0 {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(protocol.HeaderGroup, testGroup) // the front door's own 503
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "no_replica", "message": "no replica can serve this request", "group": testGroup}})
		return
	}
	fd.unavailable.Store(0)
	r := pick(n)
	w.Header().Set("Location", r.base()+req.URL.RequestURI())
	w.Header().Set(protocol.HeaderGroup, testGroup)
	w.Header().Set(protocol.HeaderReplica, r.id)
	w.WriteHeader(http.StatusTemporaryRedirect)
}

func (fd *fakeFrontDoor) setPick(pick func(n int) *fakeReplica) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	fd.pick = pick
}

func (fd *fakeFrontDoor) hitCount() int {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	return fd.hits
}

func always(r *fakeReplica) func(int) *fakeReplica {
	return func(int) *fakeReplica { return r }
}
