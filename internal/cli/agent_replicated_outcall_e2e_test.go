package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// replicatedRelay is "fulcrum agent replicated" run in-process in front of
// a relay whose calls to the next tier go through the agent (the relay's
// --proxy).
type replicatedRelay struct {
	counter *backend.Counter
	out     *syncBuffer
	errOut  *syncBuffer
	proxy   atomic.Pointer[url.URL]
	cancel  context.CancelFunc
	done    chan error
}

func startReplicatedRelay(t *testing.T, admin, group, next string) *replicatedRelay {
	t.Helper()
	r := &replicatedRelay{counter: &backend.Counter{}, out: &syncBuffer{}, errOut: &syncBuffer{}, done: make(chan error, 1)}
	tr := &http.Transport{Proxy: func(*http.Request) (*url.URL, error) {
		if u := r.proxy.Load(); u != nil {
			return u, nil
		}
		return nil, errors.New("the agent is not listening yet")
	}}
	t.Cleanup(tr.CloseIdleConnections)
	h, err := backend.NewRelayHandler(r.counter, backend.RelayOptions{Next: next, Client: &http.Client{Transport: tr, Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(h)
	t.Cleanup(server.Close)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	root := NewRoot()
	root.SetOut(r.out)
	root.SetErr(r.errOut)
	root.SetArgs([]string{"agent", "replicated", "--target", server.URL, "--listen", "127.0.0.1:0", "--register", admin,
		"--group", group, "--data-dir", t.TempDir()})
	go func() { r.done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("agent: %v\n%s", err, r.errOut.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("agent did not stop within 10s of its context ending")
		}
	})
	return r
}

// TestAgentReplicatedCallersEndToEnd runs two relays, each behind "fulcrum
// agent replicated" and calling a deduplicating counter through its agent,
// against a real balancer with a replicated group: every ordered call's
// outgoing call reaches the callee once, keyed relay/<position>/0, through
// the balancer's outcalls route; both relays get the same answers and end
// in the same state; a plain client's call through the group's bridge
// does the same.
func TestAgentReplicatedCallersEndToEnd(t *testing.T) {
	t.Parallel()
	admin, b := replicatedServer(t)
	if _, _, err := b.PutGroup(protocol.Group{Name: "relay", FrontDoor: "127.0.0.1:0", Binding: protocol.BindingReplicated,
		ReportInterval: protocol.Duration(50 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	hub, _, err := b.ReplicatedHub("relay")
	if err != nil {
		t.Fatal(err)
	}
	callee := &backend.Counter{}
	var mu sync.Mutex
	keys := map[string]int{}
	dedup := backend.NewDedup(backend.NewCounterHandler(callee, backend.CounterOptions{}), 0)
	calleeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys[r.Header.Get(backend.HeaderIdempotencyKey)]++
		mu.Unlock()
		dedup.ServeHTTP(w, r)
	}))
	t.Cleanup(calleeSrv.Close)

	r1, r2 := startReplicatedRelay(t, admin, "relay", calleeSrv.URL), startReplicatedRelay(t, admin, "relay", calleeSrv.URL)
	awaitGroup(t, b, "relay", "two replicas reporting", func() bool {
		st, err := b.Group("relay")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range st.Replicas {
			if r.ReportAgeMS != nil && r.State == "active" {
				n++
			}
		}
		return n == 2
	})
	for _, r := range []*replicatedRelay{r1, r2} {
		m := agentListeningRE.FindStringSubmatch(r.out.String()) // printed before it registered
		if m == nil {
			t.Fatalf("the agent printed %q, want listening on <URL>", r.out.String())
		}
		u, err := url.Parse(m[1])
		if err != nil {
			t.Fatal(err)
		}
		r.proxy.Store(u)
	}

	// 12 ordered increments: the k-th entry's call gets k from the callee,
	// and the relay's own counter is then k(k+1)/2.
	var want []int64
	for k := int64(1); k <= 12; k++ {
		want = append(want, k*(k+1)/2)
	}
	if got := orderIncrements(t, hub, "s1", 12); !slices.Equal(got, want) {
		t.Fatalf("12 ordered increments of the relays answered %v, want %v", got, want)
	}
	same := func(value int64) func() bool {
		return func() bool {
			s1, s2 := r1.counter.State(), r2.counter.State()
			return s1 == s2 && s1.Value == value
		}
	}
	awaitGroup(t, b, "relay", "both relays at 78", same(78))

	// A plain client through the bridge: the 13th call.
	st, err := b.Group("relay")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+st.Listening+"/increment", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(bytes.TrimSpace(body)) != `{"next":13,"value":91}` {
		t.Fatalf("POST /increment through the bridge: %d %s, want 200 {\"next\":13,\"value\":91}", resp.StatusCode, body)
	}
	awaitGroup(t, b, "relay", "both relays at 91", same(91))

	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 13 {
		t.Fatalf("the callee saw the keys %v, want 13 distinct", keys)
	}
	for k, n := range keys {
		if n != 1 || !strings.HasPrefix(k, "relay/") || !strings.HasSuffix(k, "/0") {
			t.Fatalf("the callee saw key %q %d times, want each relay/<position>/0 once: %v", k, n, keys)
		}
	}
	if v := callee.State().Value; v != 13 {
		t.Fatalf("the callee's counter is at %d, want 13: each outgoing call applied once", v)
	}
}
