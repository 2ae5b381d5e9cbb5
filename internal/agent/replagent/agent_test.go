package replagent_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/clock"
	"github.com/fulcrum-lb/fulcrum/internal/clocktest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// chanSource is a log source the test feeds by hand: each Stream call
// sends its from on opened, then passes on what the test sends on events.
type chanSource struct {
	opened chan uint64
	events chan protocol.LogEvent
}

func newChanSource() *chanSource {
	return &chanSource{opened: make(chan uint64, 16), events: make(chan protocol.LogEvent)}
}

func (s *chanSource) Stream(ctx context.Context, from uint64, out chan<- replagent.SourcedEvent) error {
	s.opened <- from
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-s.events:
			select {
			case out <- replagent.SourcedEvent{Event: ev, Instance: src}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// sent is one reply the agent posted.
type sent struct {
	to    string
	reply protocol.ReplicaReply
}

// memAdmin keeps what the agent posts and takes checkpoints from peer
// agents over HTTP (AdminClient).
type memAdmin struct {
	replies chan sent
	applied chan sent // reply.Position carries the applied position
	http    replagent.AdminClient
}

func newMemAdmin() *memAdmin {
	return &memAdmin{replies: make(chan sent, 256), applied: make(chan sent, 256)}
}

func (m *memAdmin) PostReplies(_ context.Context, base string, rs []protocol.ReplicaReply) error {
	for _, r := range rs {
		m.replies <- sent{base, r}
	}
	return nil
}

func (m *memAdmin) PostApplied(_ context.Context, base string, r protocol.AppliedReport) error {
	select {
	case m.applied <- sent{base, protocol.ReplicaReply{Position: r.Applied, Evicted: r.Checkpoints}}:
	default:
	}
	return nil
}

func (m *memAdmin) Checkpoint(ctx context.Context, p protocol.LogPeer, maxState int64) ([]byte, uint64, error) {
	return m.http.Checkpoint(ctx, p, maxState)
}

// replica is a counter server, its agent and the agent's listener.
type replica struct {
	id      string
	counter *backend.Counter
	server  *httptest.Server
	agent   *replagent.Agent
	store   *replagent.Store
	src     *chanSource
	admin   *memAdmin
	listen  *httptest.Server
	cancel  context.CancelFunc
	runErr  chan error
}

type replicaOpts struct {
	dir    string
	server *httptest.Server // default: a new counter server
	clock  clock.Clock
	admins []string
	// outcaller posts the server's outgoing calls (default none).
	outcaller replagent.Outcaller
}

func startReplica(t testing.TB, id string, o replicaOpts) *replica {
	t.Helper()
	r := &replica{id: id, src: newChanSource(), admin: newMemAdmin(), runErr: make(chan error, 1)}
	r.server = o.server
	if r.server == nil {
		r.counter, r.server = counterServer(t)
	}
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	var err error
	if r.store, err = replagent.OpenStore(o.dir, "g"); err != nil {
		t.Fatal(err)
	}
	d := newHTTP(t, r.server.URL, replagent.HTTPOptions{})
	r.agent, err = replagent.New(replagent.Options{Group: "g", Self: id, Deliverer: d, Source: r.src, Admin: r.admin,
		Admins: o.admins, Store: r.store, Clock: o.clock, Outcaller: o.outcaller})
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := replagent.NewProxy(r.server.URL)
	if err != nil {
		t.Fatal(err)
	}
	r.listen = httptest.NewServer(r.agent.Handler(proxy))
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.runErr <- r.agent.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the agent and returns Run's error (nil after the first call).
func (r *replica) stop(t testing.TB) error {
	t.Helper()
	if r.listen == nil {
		return nil
	}
	r.cancel()
	err := wait(t, r.runErr, "Run to return")
	r.listen.Close()
	r.listen = nil
	r.store.Close()
	return err
}

func wait[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func (r *replica) send(t testing.TB, evs ...protocol.LogEvent) {
	t.Helper()
	for _, ev := range evs {
		select {
		case r.src.events <- ev:
		case err := <-r.runErr:
			t.Fatalf("the agent stopped before taking %+v: %v", ev, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("the agent did not take %+v", ev)
		}
	}
}

// counterEntry is an increment by 2 at pos.
func counterEntry(pos uint64, replyTo string) protocol.LogEvent {
	return protocol.LogEvent{Type: protocol.LogEventEntry, Position: pos, ReplyTo: replyTo, Request: increment(pos)}
}

// expectReply waits for the reply to pos and checks the counter's value.
func (r *replica) expectReply(t testing.TB, to string, pos uint64, value int64) {
	t.Helper()
	s := wait(t, r.admin.replies, "the reply to "+strconv.FormatUint(pos, 10))
	var body struct{ Value int64 }
	_ = json.Unmarshal(s.reply.Body, &body)
	if s.to != to || s.reply.Position != pos || s.reply.Status != 200 || body.Value != value {
		t.Fatalf("%s posted %+v (%s) to %s, want the reply to %d, value %d, to %s", r.id, s.reply, s.reply.Body, s.to, pos, value, to)
	}
}

func get(t testing.TB, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestAgentAppliesInOrderAndServesCheckpoints(t *testing.T) {
	t.Parallel()
	r := startReplica(t, "r1", replicaOpts{})
	if from := wait(t, r.src.opened, "the stream"); from != 1 {
		t.Fatalf("a new agent streamed from %d, want 1", from)
	}
	r.send(t, hello(0), counterEntry(1, ""), counterEntry(4, "http://instance-b:7070"), counterEntry(9, ""))
	r.expectReply(t, src, 1, 2)
	r.expectReply(t, "http://instance-b:7070", 4, 4)
	r.expectReply(t, src, 9, 6)

	resp, body := get(t, r.listen.URL+protocol.CheckpointPath)
	if resp.StatusCode != 200 || resp.Header.Get(protocol.HeaderPosition) != "9" {
		t.Fatalf("checkpoint: %d position %q, want 200 at position 9", resp.StatusCode, resp.Header.Get(protocol.HeaderPosition))
	}
	st, err := backend.ParseCounterState(body)
	if err != nil || st != r.counter.State() || st.Value != 6 {
		t.Fatalf("checkpoint state %+v (%v), want the counter's, value 6", st, err)
	}
	resp, body = get(t, r.listen.URL+"/value")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"value":6`) {
		t.Fatalf("GET /value through the agent: %d %s, want the server's answer, value 6", resp.StatusCode, body)
	}
	resp, err = http.Post(r.listen.URL+protocol.CheckpointPath, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST checkpoint: %d, want 405", resp.StatusCode)
	}

	// A bridge asks for reply 4 again, and for one the agent never had.
	r.send(t, protocol.LogEvent{Type: protocol.LogEventReplyRequest, Position: 4, ReplyTo: "http://instance-c:7070"})
	r.expectReply(t, "http://instance-c:7070", 4, 4)
	r.send(t, protocol.LogEvent{Type: protocol.LogEventReplyRequest, Position: 2})
	if s := wait(t, r.admin.replies, "the answer about 2"); s.to != src || s.reply.Position != 2 || !s.reply.Evicted {
		t.Fatalf("reply request 2: posted %+v to %s, want evicted to the streaming instance", s.reply, s.to)
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run after its context ended: %v, want nil", err)
	}
}

func TestAgentJoinsByStateTransfer(t *testing.T) {
	t.Parallel()
	r1 := startReplica(t, "r1", replicaOpts{})
	wait(t, r1.src.opened, "r1's stream")
	r1.send(t, hello(0), counterEntry(1, ""), counterEntry(2, ""), counterEntry(3, ""))
	for pos := uint64(1); pos <= 3; pos++ {
		r1.expectReply(t, src, pos, int64(2*pos))
	}

	r2 := startReplica(t, "r2", replicaOpts{})
	wait(t, r2.src.opened, "r2's stream")
	r2.send(t, hello(0,
		protocol.LogPeer{ID: "r2", Address: "http://self.invalid", Applied: 3},
		protocol.LogPeer{ID: "r1", Address: r1.listen.URL, Applied: 3}))
	if from := wait(t, r2.src.opened, "r2's stream after the transfer"); from != 4 {
		t.Fatalf("after a checkpoint at 3, r2 streamed from %d, want 4", from)
	}
	if r2.counter.State() != r1.counter.State() || r2.agent.Applied() != 3 {
		t.Fatalf("r2 after the transfer: %+v applied %d, want r1's %+v at 3", r2.counter.State(), r2.agent.Applied(), r1.counter.State())
	}
	r1.send(t, counterEntry(4, ""))
	r2.send(t, counterEntry(3, ""), counterEntry(4, ""))
	r1.expectReply(t, src, 4, 8)
	r2.expectReply(t, src, 4, 8)
	if r2.counter.State() != r1.counter.State() {
		t.Fatalf("after entry 4: r1 %+v, r2 %+v, want equal", r1.counter.State(), r2.counter.State())
	}
}

func TestAgentAppliedPositionSurvivesARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, srv := counterServer(t)
	r := startReplica(t, "r1", replicaOpts{dir: dir, server: srv})
	wait(t, r.src.opened, "the stream")
	r.send(t, hello(0), counterEntry(1, ""), counterEntry(2, ""))
	r.expectReply(t, src, 1, 2)
	r.expectReply(t, src, 2, 4)
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	st, err := replagent.OpenStore(dir, "g")
	if err != nil {
		t.Fatal(err)
	}
	pos, err := st.Applied()
	st.Close()
	if err != nil || pos != 2 {
		t.Fatalf("stored applied position %d (%v), want 2", pos, err)
	}
	if _, err := replagent.OpenStore(dir, "other"); err == nil || !strings.Contains(err.Error(), `belongs to group "g"`) {
		t.Fatalf("opening g's data dir for group other: %v, want a refusal naming g", err)
	}

	r = startReplica(t, "r1", replicaOpts{dir: dir, server: srv})
	if from := wait(t, r.src.opened, "the stream after the restart"); from != 3 {
		t.Fatalf("after a restart at 2 the agent streamed from %d, want 3", from)
	}
	r.send(t, hello(0), counterEntry(2, ""), counterEntry(3, ""))
	r.expectReply(t, src, 3, 6)
	if v := c.State().Value; v != 6 {
		t.Fatalf("counter %d after entries 1–3 (2 sent twice), want 6", v)
	}
}

func TestAgentStopsWhenTheServerDoesNotAnswer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := startReplica(t, "r1", replicaOpts{dir: dir})
	wait(t, r.src.opened, "the stream")
	r.send(t, hello(0), counterEntry(1, ""))
	r.expectReply(t, src, 1, 2)
	r.server.Close()
	r.send(t, counterEntry(5, ""))
	err := wait(t, r.runErr, "the agent to stop")
	if err == nil || !strings.Contains(err.Error(), "position 5") || !strings.Contains(err.Error(), "never skip") && !strings.Contains(err.Error(), "rather than skip") {
		t.Fatalf("Run: %v, want an error naming position 5", err)
	}
	if r.agent.Applied() != 1 {
		t.Fatalf("applied %d, want 1", r.agent.Applied())
	}
	r.runErr <- err // for stop
}

func TestAgentStopsBehindTheTrimPointWithoutCheckpoints(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.NotFoundHandler()) // no /fulcrum/state
	defer plain.Close()
	r := startReplica(t, "r1", replicaOpts{server: plain})
	wait(t, r.src.opened, "the stream")
	r.send(t, hello(7, protocol.LogPeer{ID: "r2", Address: "http://r2.invalid", Applied: 9}))
	err := wait(t, r.runErr, "the agent to stop")
	if err == nil || !strings.Contains(err.Error(), "must be reset with state transfer") || !strings.Contains(err.Error(), "trimmed up to position 7") {
		t.Fatalf("Run: %v, want a stop saying the replica must be reset with state transfer", err)
	}
	r.runErr <- err
}

func TestAgentReportsItsAppliedPositionToEveryAdmin(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(t0)
	admins := []string{"http://instance-a:7070", "http://instance-b:7070"}
	r := startReplica(t, "r1", replicaOpts{clock: clk, admins: admins})
	wait(t, r.src.opened, "the stream")
	r.send(t, hello(0), counterEntry(1, ""), counterEntry(2, ""))
	r.expectReply(t, src, 1, 2)
	r.expectReply(t, src, 2, 4)
	// A checkpoint is taken between two entries: once it is served, entry
	// 2 is applied and stored.
	if resp, _ := get(t, r.listen.URL+protocol.CheckpointPath); resp.Header.Get(protocol.HeaderPosition) != "2" {
		t.Fatalf("checkpoint at %q, want 2", resp.Header.Get(protocol.HeaderPosition))
	}
	clk.Advance(time.Second)
	var mu sync.Mutex
	got := map[string]uint64{}
	for range admins {
		s := wait(t, r.admin.applied, "an applied report")
		if !s.reply.Evicted {
			t.Errorf("report to %s says the counter cannot checkpoint", s.to)
		}
		mu.Lock()
		got[s.to] = s.reply.Position
		mu.Unlock()
	}
	for _, a := range admins {
		if got[a] != 2 {
			t.Errorf("applied report to %s: %d, want 2 (reports %v)", a, got[a], got)
		}
	}
}

func TestAgentResyncsByStateTransferWhenTheStreamIsTrimmed(t *testing.T) {
	t.Parallel()
	r1 := startReplica(t, "r1", replicaOpts{})
	wait(t, r1.src.opened, "r1's stream")
	r1.send(t, hello(0), counterEntry(1, ""), counterEntry(2, ""), counterEntry(3, ""))
	for pos := uint64(1); pos <= 3; pos++ {
		r1.expectReply(t, src, pos, int64(2*pos))
	}

	r2 := startReplica(t, "r2", replicaOpts{})
	wait(t, r2.src.opened, "r2's stream")
	r2.send(t, hello(0)) // joins with no peer: replays from 1
	r2.send(t, hello(0, protocol.LogPeer{ID: "r1", Address: r1.listen.URL, Applied: 3}),
		protocol.LogEvent{Type: protocol.LogEventError, Code: protocol.CodeTrimmed, Position: 2})
	if from := wait(t, r2.src.opened, "r2's stream after the resync"); from != 4 {
		t.Fatalf("after a resync at 3, r2 streamed from %d, want 4", from)
	}
	if r2.counter.State() != r1.counter.State() {
		t.Fatalf("r2 %+v, want r1's %+v", r2.counter.State(), r1.counter.State())
	}
}

// TestAgentTakesCheckpointsBetweenEntries asks for a checkpoint while the
// server is in the middle of an entry: the answer waits for it, and holds
// the state after it.
func TestAgentTakesCheckpointsBetweenEntries(t *testing.T) {
	t.Parallel()
	counter := &backend.Counter{}
	inner := backend.NewCounterHandler(counter, backend.CounterOptions{})
	entered, release := make(chan struct{}), make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/increment" {
			entered <- struct{}{}
			<-release
		}
		inner.ServeHTTP(w, r)
	}))
	defer server.Close()
	r := startReplica(t, "r1", replicaOpts{server: server})
	wait(t, r.src.opened, "the stream")
	r.send(t, hello(0), counterEntry(1, ""))
	wait(t, entered, "the server to take entry 1")

	asked := make(chan struct{})
	answered := make(chan *http.Response, 1)
	h := r.agent.Handler(http.NotFoundHandler())
	go func() {
		req := httptest.NewRequest(http.MethodGet, protocol.CheckpointPath, nil)
		w := httptest.NewRecorder()
		close(asked)
		h.ServeHTTP(w, req)
		answered <- w.Result()
	}()
	<-asked
	close(release)
	resp := wait(t, answered, "the checkpoint")
	body, _ := io.ReadAll(resp.Body)
	st, err := backend.ParseCounterState(body)
	if resp.StatusCode != 200 || resp.Header.Get(protocol.HeaderPosition) != "1" || err != nil || st.Value != 2 {
		t.Fatalf("checkpoint during entry 1: %d at %q, state %s (%v); want entry 1's state (value 2) at position 1",
			resp.StatusCode, resp.Header.Get(protocol.HeaderPosition), body, err)
	}
}

// TestAgentFinishesTheEntryItIsDeliveringWhenStopped stops the agent while
// its server is in the middle of an entry: the entry is finished, its
// reply posted and its position stored.
func TestAgentFinishesTheEntryItIsDeliveringWhenStopped(t *testing.T) {
	t.Parallel()
	counter := &backend.Counter{}
	inner := backend.NewCounterHandler(counter, backend.CounterOptions{})
	entered, release := make(chan struct{}), make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/increment" {
			entered <- struct{}{}
			<-release
		}
		inner.ServeHTTP(w, r)
	}))
	defer server.Close()
	dir := t.TempDir()
	r := startReplica(t, "r1", replicaOpts{dir: dir, server: server})
	wait(t, r.src.opened, "the stream")
	r.send(t, hello(0), counterEntry(1, ""))
	wait(t, entered, "the server to take entry 1")
	r.cancel()
	close(release)
	if err := wait(t, r.runErr, "Run to return"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	r.runErr <- nil // for the cleanup's stop
	r.expectReply(t, src, 1, 2)
	if got := r.agent.Applied(); got != 1 {
		t.Fatalf("applied %d after a stop during entry 1, want 1", got)
	}
}

func TestAgentMetricsAreTheEntriesApplied(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(t0)
	r := startReplica(t, "r1", replicaOpts{clock: clk})
	if m := r.agent.Metrics(clk.Now()); m != nil {
		t.Fatalf("first call: %v, want nothing (no window yet)", m)
	}
	wait(t, r.src.opened, "the stream")
	r.send(t, hello(0), counterEntry(1, ""), counterEntry(2, ""), counterEntry(3, ""))
	for pos := uint64(1); pos <= 3; pos++ {
		r.expectReply(t, src, pos, int64(2*pos))
	}
	m := r.agent.Metrics(clk.Advance(2 * time.Second))
	if m[protocol.MetricRPS] != 1.5 {
		t.Fatalf("metrics %v, want rps 1.5 (3 entries in 2s)", m)
	}
	if _, ok := m[protocol.MetricLatencyMS]; !ok {
		t.Fatalf("metrics %v, want latency_ms", m)
	}
	if m := r.agent.Metrics(clk.Advance(time.Second)); m[protocol.MetricRPS] != 0 {
		t.Fatalf("a second without entries: %v, want rps 0", m)
	}
}
