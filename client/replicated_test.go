package client_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// answer is a call's outcome as the caller saw it.
type answer struct {
	code     int
	body     string
	position string
}

// send makes one call through tr with the given extra headers.
func send(tr http.RoundTripper, method, url string, body io.Reader, header http.Header) (answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return answer{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: string(data), position: resp.Header.Get(protocol.HeaderPosition)}, err
}

func mustSend(t *testing.T, tr http.RoundTripper, method, url string, body io.Reader, header http.Header) answer {
	t.Helper()
	a, err := send(tr, method, url, body, header)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return a
}

// TestReplicatedCallMovesToTheNextFrontDoor: a replicated group's first
// front door fails the call after reading it — dies mid-response, cuts its
// reply short, or answers 503 with Retry-After — and the call is answered
// by the second, sent unchanged: the same session, sequence and body, so
// that the group's log holds it once and the answer carries the first
// append's position. The Transport knows the group is replicated from
// Options.Replicated or from an earlier answer's Fulcrum-Position.
func TestReplicatedCallMovesToTheNextFrontDoor(t *testing.T) {
	t.Parallel()
	faults := []struct {
		name    string
		set     func(b *fakeBridge)
		outcome string
		// appended: the first front door appended the call before failing.
		appended bool
	}{
		{name: "dies after reading the call", set: func(b *fakeBridge) { b.drop.Store(1) }, outcome: "dropped", appended: true},
		{name: "reply cut short", set: func(b *fakeBridge) { b.cut.Store(1) }, outcome: "cut", appended: true},
		{name: "503 with Retry-After", set: func(b *fakeBridge) { b.busy.Store(1) }, outcome: "busy"},
	}
	bodies := map[string]func(s string) io.Reader{
		"GetBody":  func(s string) io.Reader { return strings.NewReader(s) },
		"buffered": func(s string) io.Reader { return opaque{strings.NewReader(s)} },
	}
	for _, f := range faults {
		for _, learned := range []bool{false, true} {
			for bodyName, body := range bodies {
				t.Run(fmt.Sprintf("%s/learned=%v/%s", f.name, learned, bodyName), func(t *testing.T) {
					t.Parallel()
					log := &fakeLog{}
					a, b := newFakeBridge(t, "a", log), newFakeBridge(t, "b", log)
					tr := newTransport(client.Options{FrontDoors: []string{a.srv.URL, b.srv.URL}, Replicated: !learned})
					if learned {
						if got := mustSend(t, tr, http.MethodPost, a.srv.URL+"/increment", body("first"), nil); got.code != http.StatusOK || got.position != "1" {
							t.Fatalf("first call: %+v, want 200 at position 1", got)
						}
					}
					before := len(a.calls())
					f.set(a)
					got := mustSend(t, tr, http.MethodPost, a.srv.URL+"/increment", body("payload"), nil)
					if got.code != http.StatusOK || got.body != "b:payload" {
						t.Fatalf("answer %+v, want 200 b:payload", got)
					}
					first, second := a.calls()[before:], b.calls()
					if len(first) != 1 || first[0].Outcome != f.outcome || len(second) != 1 || second[0].Outcome != "answered" {
						t.Fatalf("front doors saw %+v and %+v, want one %s call and one answered", first, second, f.outcome)
					}
					x, y := first[0], second[0]
					if x.Session != tr.ClientID() || x.Client != tr.ClientID() {
						t.Fatalf("session %q (client %q), want the client id %q", x.Session, x.Client, tr.ClientID())
					}
					if _, err := strconv.ParseUint(x.Seq, 10, 64); err != nil || x.Seq == "0" {
						t.Fatalf("sequence %q: want a decimal uint64 other than 0", x.Seq)
					}
					if y.Session != x.Session || y.Seq != x.Seq || y.Body != x.Body || y.Body != "payload" {
						t.Fatalf("re-sent call %+v differs from the first %+v", y, x)
					}
					wantLog, wantPos := 1, "1"
					if learned {
						wantLog, wantPos = 2, "2"
					}
					if y.Existed != f.appended {
						t.Fatalf("the second front door found the call in the log: %v, want %v", y.Existed, f.appended)
					}
					if log.len() != wantLog || got.position != wantPos {
						t.Fatalf("log holds %d entries, answer at position %q; want %d and %q (the call appended once)", log.len(), got.position, wantLog, wantPos)
					}
					// The second front door answered last: the next call
					// goes there first.
					mustSend(t, tr, http.MethodPost, a.srv.URL+"/increment", body("next"), nil)
					if n := len(b.calls()); n != 2 {
						t.Fatalf("the second front door saw %d calls, want 2: the next call goes to the one that answered", n)
					}
				})
			}
		}
	}
}

// TestReplicatedAllFrontDoorsFail: each front door is tried once per call,
// then the last error is returned.
func TestReplicatedAllFrontDoorsFail(t *testing.T) {
	t.Parallel()
	log := &fakeLog{}
	a, b := newFakeBridge(t, "a", log), newFakeBridge(t, "b", log)
	tr := newTransport(client.Options{FrontDoors: []string{a.srv.URL, b.srv.URL}, Replicated: true})
	a.drop.Store(1)
	b.cut.Store(1)
	_, err := send(tr, http.MethodPost, a.srv.URL+"/increment", strings.NewReader("x"), nil)
	if err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("error %v, want the last front door's: the reply cut short", err)
	}
	if na, nb := len(a.calls()), len(b.calls()); na != 1 || nb != 1 {
		t.Fatalf("front doors saw %d and %d calls, want 1 and 1", na, nb)
	}
	if log.len() != 1 {
		t.Fatalf("log holds %d entries, want 1", log.len())
	}
	// Both refuse with 503: the last 503 is returned.
	a.busy.Store(1)
	b.busy.Store(1)
	got := mustSend(t, tr, http.MethodPost, a.srv.URL+"/increment", strings.NewReader("y"), nil)
	if got.code != http.StatusServiceUnavailable || got.body != "b busy" {
		t.Fatalf("answer %+v, want the last front door's 503 (b's: no front door answered before, so a was tried first)", got)
	}
	if na, nb := len(a.calls()), len(b.calls()); na != 2 || nb != 2 {
		t.Fatalf("front doors saw %d and %d calls, want 2 and 2", na, nb)
	}
}

// TestReplicatedLoneFrontDoorGetsASecondTry: without Options.FrontDoors a
// replicated group's front door is tried twice after a transport error
// (the same session and sequence), and once after a 503.
func TestReplicatedLoneFrontDoorGetsASecondTry(t *testing.T) {
	t.Parallel()
	log := &fakeLog{}
	a := newFakeBridge(t, "a", log)
	tr := newTransport(client.Options{})
	mustSend(t, tr, http.MethodPost, a.srv.URL+"/increment", strings.NewReader("learn"), nil)

	a.drop.Store(1)
	got := mustSend(t, tr, http.MethodPost, a.srv.URL+"/increment", opaque{strings.NewReader("again")}, nil)
	calls := a.calls()[1:]
	if got.code != http.StatusOK || got.body != "a:again" || len(calls) != 2 || calls[0].Seq != calls[1].Seq || calls[0].Body != calls[1].Body {
		t.Fatalf("answer %+v after calls %+v, want a:again on the second try of the same call", got, calls)
	}
	if log.len() != 2 {
		t.Fatalf("log holds %d entries, want 2", log.len())
	}

	a.drop.Store(2)
	if _, err := send(tr, http.MethodPost, a.srv.URL+"/increment", strings.NewReader("lost"), nil); err == nil {
		t.Fatal("a call whose front door failed twice succeeded")
	}
	if n := len(a.calls()); n != 5 {
		t.Fatalf("front door saw %d calls, want 5: two tries of the failed call", n)
	}

	a.busy.Store(1)
	if got := mustSend(t, tr, http.MethodPost, a.srv.URL+"/increment", strings.NewReader("z"), nil); got.code != http.StatusServiceUnavailable {
		t.Fatalf("answer %+v, want the lone front door's 503 returned", got)
	}
	if n := len(a.calls()); n != 6 {
		t.Fatalf("front door saw %d calls, want 6: a 503 is not re-sent to the same front door", n)
	}
}

// TestUnknownGroupIsNotResent: before a front door's answer has shown its
// group replicated (and without Options.Replicated), a call that fails
// after it was sent is returned, not re-sent: the group may run it. A 503
// without Retry-After from a replicated front door is returned too.
func TestUnknownGroupIsNotResent(t *testing.T) {
	t.Parallel()
	t.Run("first call", func(t *testing.T) {
		t.Parallel()
		log := &fakeLog{}
		a, b := newFakeBridge(t, "a", log), newFakeBridge(t, "b", log)
		tr := newTransport(client.Options{FrontDoors: []string{a.srv.URL, b.srv.URL}})
		a.drop.Store(1)
		if _, err := send(tr, http.MethodPost, a.srv.URL+"/x", strings.NewReader("x"), nil); err == nil {
			t.Fatal("the dropped call succeeded")
		}
		if n := len(b.calls()); n != 0 {
			t.Fatalf("the second front door saw %d calls, want 0", n)
		}
	})
	t.Run("answers without a position", func(t *testing.T) {
		t.Parallel()
		log := &fakeLog{}
		a, b := newFakeBridge(t, "a", log), newFakeBridge(t, "b", log)
		a.plain.Store(true)
		tr := newTransport(client.Options{FrontDoors: []string{a.srv.URL, b.srv.URL}})
		if got := mustSend(t, tr, http.MethodGet, a.srv.URL+"/x", nil, nil); got.code != http.StatusOK || got.position != "" {
			t.Fatalf("answer %+v, want 200 without a position", got)
		}
		a.drop.Store(1)
		if _, err := send(tr, http.MethodPost, a.srv.URL+"/x", strings.NewReader("x"), nil); err == nil {
			t.Fatal("the dropped call succeeded")
		}
		if n := len(b.calls()); n != 0 {
			t.Fatalf("the second front door saw %d calls, want 0", n)
		}
	})
	t.Run("503 without Retry-After", func(t *testing.T) {
		t.Parallel()
		log := &fakeLog{}
		a, b := newFakeBridge(t, "a", log), newFakeBridge(t, "b", log)
		tr := newTransport(client.Options{FrontDoors: []string{a.srv.URL, b.srv.URL}, Replicated: true})
		a.busy.Store(1)
		a.noRetryAfter.Store(true)
		if got := mustSend(t, tr, http.MethodPost, a.srv.URL+"/x", strings.NewReader("x"), nil); got.code != http.StatusServiceUnavailable {
			t.Fatalf("answer %+v, want the 503 returned", got)
		}
		if n := len(b.calls()); n != 0 {
			t.Fatalf("the second front door saw %d calls, want 0", n)
		}
	})
	t.Run("forgotten once the front door redirects", func(t *testing.T) {
		t.Parallel()
		log := &fakeLog{}
		a := newFakeBridge(t, "a", log)
		r1 := newFakeReplica(t, "r1", "")
		tr := newTransport(client.Options{})
		mustSend(t, tr, http.MethodPost, a.srv.URL+"/x", strings.NewReader("learn"), nil)
		a.redirectTo.Store(r1) // the group is now on-demand
		if got := mustSend(t, tr, http.MethodPost, a.srv.URL+"/x", strings.NewReader("bound"), nil); got.body != "r1:bound" {
			t.Fatalf("answer %+v, want r1's", got)
		}
		tr.Unbind(a.srv.URL)
		a.redirectTo.Store(nil)
		a.plain.Store(true)
		a.drop.Store(1)
		if _, err := send(tr, http.MethodPost, a.srv.URL+"/x", strings.NewReader("x"), nil); err == nil {
			t.Fatal("the dropped call succeeded")
		}
		if n := len(a.calls()); n != 3 {
			t.Fatalf("front door saw %d calls, want 3: the dropped call not re-sent", n)
		}
	})
}

// TestConcurrentCallsCarryDistinctSequences: concurrent calls of one
// Transport carry its client id as their session and distinct sequence
// numbers; a second Transport with the same ClientID (a restarted process)
// does not reuse the first one's numbers.
func TestConcurrentCallsCarryDistinctSequences(t *testing.T) {
	t.Parallel()
	log := &fakeLog{}
	a := newFakeBridge(t, "a", log)
	const workers, perWorker = 8, 40
	trs := []*client.Transport{newTransport(client.Options{ClientID: "c-1"}), newTransport(client.Options{ClientID: "c-1"})}
	var wg sync.WaitGroup
	for _, tr := range trs {
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					if _, err := send(tr, http.MethodPost, a.srv.URL+"/increment", strings.NewReader(fmt.Sprintf("w%d-%d", w, i)), nil); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	wg.Wait()
	seqs := map[string]int{}
	for _, c := range a.calls() {
		if c.Session != "c-1" {
			t.Fatalf("call with session %q, want the client id", c.Session)
		}
		seqs[c.Seq]++
	}
	if want := len(trs) * workers * perWorker; len(seqs) != want || log.len() != want {
		t.Fatalf("%d distinct sequences, %d log entries; want %d each", len(seqs), log.len(), want)
	}
}

// TestCallerSetIdentityIsKept: a caller's Fulcrum-Session,
// Fulcrum-Sequence or Idempotency-Key goes with every try of the call
// unchanged; the Transport adds only what the caller did not set, and
// nothing beside an Idempotency-Key (which names the call alone). The
// caller's request is not modified.
func TestCallerSetIdentityIsKept(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		header            http.Header
		session, seq, key string // want; "*" any non-empty
	}{
		{name: "session and sequence", header: http.Header{protocol.HeaderSession: {"app"}, protocol.HeaderSequence: {"42"}}, session: "app", seq: "42"},
		{name: "idempotency key", header: http.Header{protocol.HeaderIdempotencyKey: {"k-1"}}, key: "k-1"},
		{name: "session only", header: http.Header{protocol.HeaderSession: {"app"}}, session: "app", seq: "*"},
		{name: "sequence only", header: http.Header{protocol.HeaderSequence: {"7"}}, session: "c-9", seq: "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := &fakeLog{}
			a, b := newFakeBridge(t, "a", log), newFakeBridge(t, "b", log)
			tr := newTransport(client.Options{ClientID: "c-9", FrontDoors: []string{a.srv.URL, b.srv.URL}, Replicated: true})
			a.drop.Store(1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.srv.URL+"/increment", strings.NewReader("p"))
			for k, v := range tt.header {
				req.Header[k] = v
			}
			orig := req.Header.Clone()
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			calls := append(a.calls(), b.calls()...)
			if len(calls) != 2 {
				t.Fatalf("%d calls seen, want 2", len(calls))
			}
			for _, c := range calls {
				if !matches(c.Session, tt.session) || !matches(c.Seq, tt.seq) || !matches(c.Key, tt.key) {
					t.Fatalf("call carried session %q seq %q key %q; want %q %q %q", c.Session, c.Seq, c.Key, tt.session, tt.seq, tt.key)
				}
			}
			if calls[0].Seq != calls[1].Seq {
				t.Fatalf("sequences %q and %q: the re-sent call changed", calls[0].Seq, calls[1].Seq)
			}
			if len(req.Header) != len(orig) {
				t.Fatalf("the caller's header changed: %v, was %v", req.Header, orig)
			}
			for k := range orig {
				if req.Header.Get(k) != orig.Get(k) {
					t.Fatalf("the caller's header changed: %v, was %v", req.Header, orig)
				}
			}
		})
	}
}

func matches(got, want string) bool {
	if want == "*" {
		return got != ""
	}
	return got == want
}

// TestIdentityGoesToFrontDoorsOnly: calls through an on-demand front door
// carry the session and a sequence there; the bound calls to the replica
// carry neither.
func TestIdentityGoesToFrontDoorsOnly(t *testing.T) {
	t.Parallel()
	a := newFakeBridge(t, "a", &fakeLog{})
	r1 := newFakeReplica(t, "r1", "")
	a.redirectTo.Store(r1)
	headers := make(chan http.Header, 2)
	r1.wrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			headers <- r.Header.Clone()
			next.ServeHTTP(w, r)
		})
	})
	tr := newTransport(client.Options{})
	for range 2 {
		if got := mustSend(t, tr, http.MethodPost, a.srv.URL+"/x", strings.NewReader("p"), nil); got.body != "r1:p" {
			t.Fatalf("answer %+v, want r1's", got)
		}
		h := <-headers
		if h.Get(protocol.HeaderSession) != "" || h.Get(protocol.HeaderSequence) != "" {
			t.Fatalf("the replica got session %q sequence %q, want neither", h.Get(protocol.HeaderSession), h.Get(protocol.HeaderSequence))
		}
	}
	calls := a.calls()
	if len(calls) != 1 || calls[0].Session != tr.ClientID() || calls[0].Seq == "" {
		t.Fatalf("front door saw %+v, want one call with the session and a sequence", calls)
	}
}

// TestReplicatedReplyLongerThanTheBuffer: a reply longer than
// MaxBufferedBody is returned whole, its first bytes read ahead and the
// rest streamed.
func TestReplicatedReplyLongerThanTheBuffer(t *testing.T) {
	t.Parallel()
	a := newFakeBridge(t, "a", &fakeLog{})
	tr := newTransport(client.Options{Replicated: true, MaxBufferedBody: 8})
	big := strings.Repeat("x", 100)
	got := mustSend(t, tr, http.MethodPost, a.srv.URL+"/x", strings.NewReader(big), nil)
	if got.code != http.StatusOK || got.body != "a:"+big {
		t.Fatalf("answer %d, %d bytes; want 200 and %d bytes", got.code, len(got.body), len(big)+2)
	}
}

// TestCutAnswerShowsTheGroupReplicated: an answer cut short whose headers
// carry Fulcrum-Position is a replicated group's, even on the first call
// without Options.Replicated: the call is re-sent, and appended once.
func TestCutAnswerShowsTheGroupReplicated(t *testing.T) {
	t.Parallel()
	log := &fakeLog{}
	a, b := newFakeBridge(t, "a", log), newFakeBridge(t, "b", log)
	tr := newTransport(client.Options{FrontDoors: []string{a.srv.URL, b.srv.URL}})
	a.cut.Store(1)
	got := mustSend(t, tr, http.MethodPost, a.srv.URL+"/increment", strings.NewReader("p"), nil)
	if got.code != http.StatusOK || got.body != "b:p" || got.position != "1" {
		t.Fatalf("answer %+v, want b:p at position 1", got)
	}
	if calls := b.calls(); len(calls) != 1 || !calls[0].Existed || log.len() != 1 {
		t.Fatalf("second front door saw %+v, log holds %d; want the call found in the log", calls, log.len())
	}
}

// TestReplicatedAnswersUnreadWithoutABuffer: with a negative
// MaxBufferedBody the answers are not read ahead, so a cut in one reaches
// the caller's read and the call is not re-sent.
func TestReplicatedAnswersUnreadWithoutABuffer(t *testing.T) {
	t.Parallel()
	log := &fakeLog{}
	a, b := newFakeBridge(t, "a", log), newFakeBridge(t, "b", log)
	tr := newTransport(client.Options{FrontDoors: []string{a.srv.URL, b.srv.URL}, Replicated: true, MaxBufferedBody: -1})
	a.cut.Store(1)
	got, err := send(tr, http.MethodPost, a.srv.URL+"/increment", strings.NewReader("p"), nil)
	if err == nil || got.code != http.StatusOK || got.body != "a:p" {
		t.Fatalf("answer %+v, %v; want a:p cut short, the caller's read failing", got, err)
	}
	if n := len(b.calls()); n != 0 {
		t.Fatalf("the second front door saw %d calls, want 0", n)
	}
}
