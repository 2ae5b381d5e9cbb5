package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func newTransport(opts client.Options) *client.Transport {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return client.NewTransport(opts)
}

// do sends one call through t and returns the status and body.
func do(t *testing.T, tr http.RoundTripper, method, url string, body io.Reader) (int, string) {
	t.Helper()
	code, text, err := tryDo(tr, method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return code, text
}

func tryDo(tr http.RoundTripper, method, url string, body io.Reader) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, "", err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

// opaque hides a reader's type, so that http.NewRequest sets no GetBody.
type opaque struct{ io.Reader }

func TestBindingIsCachedAndHeadersSent(t *testing.T) {
	t.Parallel()
	r1 := newFakeReplica(t, "r1", "")
	fd := newFakeFrontDoor(t, r1)
	tr := newTransport(client.Options{ClientID: "client-7"})

	for i := range 3 {
		code, body := do(t, tr, http.MethodGet, fmt.Sprintf("%s/prime/%d?v=1", fd.srv.URL, i), nil)
		if code != http.StatusOK || body != "r1:" {
			t.Fatalf("call %d: %d %q, want 200 from r1", i, code, body)
		}
	}
	if got := fd.hitCount(); got != 1 {
		t.Fatalf("front door hit %d times, want once", got)
	}
	runs := r1.ran()
	if len(runs) != 3 {
		t.Fatalf("r1 ran %d calls, want 3", len(runs))
	}
	for i, c := range runs {
		want := call{Path: fmt.Sprintf("/prime/%d?v=1", i), Binding: "g/r1", Client: "client-7"}
		if c != want {
			t.Errorf("call %d = %+v, want %+v", i, c, want)
		}
	}
	fd.mu.Lock()
	fdClient := fd.clients[0]
	fd.mu.Unlock()
	if fdClient != "client-7" {
		t.Errorf("front door saw client %q, want client-7", fdClient)
	}
	b, ok := tr.Binding(fd.srv.URL)
	if want := (client.Binding{Group: testGroup, Replica: "r1", URL: r1.srv.URL}); !ok || b != want {
		t.Fatalf("Binding = %+v, %v; want %+v", b, ok, want)
	}
	tr.Unbind(fd.srv.URL)
	if _, ok := tr.Binding(fd.srv.URL); ok {
		t.Fatal("binding left after Unbind")
	}
}

func TestRandomClientIDIsStable(t *testing.T) {
	t.Parallel()
	a, b := newTransport(client.Options{}), newTransport(client.Options{})
	if a.ClientID() == "" || a.ClientID() == b.ClientID() || len(a.ClientID()) > 128 {
		t.Fatalf("client ids %q and %q: want distinct, non-empty, at most 128 characters", a.ClientID(), b.ClientID())
	}
	if a.ClientID() != a.ClientID() {
		t.Fatal("client id changes")
	}
}

func TestReplicaBasePathIsKept(t *testing.T) {
	t.Parallel()
	r1 := newFakeReplica(t, "r1", "/api/v2")
	fd := newFakeFrontDoor(t, r1)
	tr := newTransport(client.Options{})
	do(t, tr, http.MethodGet, fd.srv.URL+"/prime/7?x=a%2Fb", nil)
	do(t, tr, http.MethodGet, fd.srv.URL+"/count/a%2Fb?y=1", nil)
	runs := r1.ran()
	if len(runs) != 2 || runs[0].Path != "/api/v2/prime/7?x=a%2Fb" || runs[1].Path != "/api/v2/count/a%2Fb?y=1" {
		t.Fatalf("replica saw %+v", runs)
	}
	if b, _ := tr.Binding(fd.srv.URL); b.URL != r1.srv.URL+"/api/v2" {
		t.Fatalf("binding URL %q, want %q", b.URL, r1.srv.URL+"/api/v2")
	}
}

func TestRebindIsFollowedWithTheBodyReplayed(t *testing.T) {
	t.Parallel()
	bodies := map[string]func() io.Reader{
		"GetBody":  func() io.Reader { return strings.NewReader("payload") },
		"buffered": func() io.Reader { return opaque{strings.NewReader("payload")} },
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r1, r2 := newFakeReplica(t, "r1", ""), newFakeReplica(t, "r2", "")
			fd := newFakeFrontDoor(t, r1, r2) // first r1, then r2
			tr := newTransport(client.Options{})
			do(t, tr, http.MethodPost, fd.srv.URL+"/echo", body())
			r1.rebinds.Store(1)
			code, got := do(t, tr, http.MethodPost, fd.srv.URL+"/echo?n=2", body())
			if code != http.StatusOK || got != "r2:payload" {
				t.Fatalf("after rebind: %d %q, want 200 r2:payload", code, got)
			}
			if n := len(r1.ran()); n != 1 {
				t.Fatalf("r1 ran %d calls, want only the first", n)
			}
			if runs := r2.ran(); len(runs) != 1 || runs[0] != (call{Path: "/echo?n=2", Body: "payload", Binding: "g/r2", Client: tr.ClientID()}) {
				t.Fatalf("r2 ran %+v", runs)
			}
			if fd.hitCount() != 2 {
				t.Fatalf("front door hit %d times, want 2", fd.hitCount())
			}
			if b, _ := tr.Binding(fd.srv.URL); b.Replica != "r2" {
				t.Fatalf("bound to %q, want r2", b.Replica)
			}
		})
	}
}

func TestDialFailureRebindsWithoutRunningTwice(t *testing.T) {
	t.Parallel()
	r1, r2 := newFakeReplica(t, "r1", ""), newFakeReplica(t, "r2", "")
	fd := newFakeFrontDoor(t, r1)
	// Every call dials: a kept-alive connection to r1 would be closed by
	// r1's death, and the next call could take it from the pool before
	// the transport noticed, failing on a connection that was made
	// (net/http's "server closed idle connection", not this test's case).
	tr := newTransport(client.Options{Base: &http.Transport{DisableKeepAlives: true}})
	do(t, tr, http.MethodPost, fd.srv.URL+"/echo", strings.NewReader("one"))

	r1.srv.Close() // the replica dies; connections are refused
	fd.setPick(always(r2))
	code, got := do(t, tr, http.MethodPost, fd.srv.URL+"/echo", opaque{strings.NewReader("two")})
	if code != http.StatusOK || got != "r2:two" {
		t.Fatalf("after the replica died: %d %q, want 200 r2:two", code, got)
	}
	if n1, n2 := len(r1.ran()), len(r2.ran()); n1 != 1 || n2 != 1 {
		t.Fatalf("r1 ran %d and r2 ran %d calls, want 1 and 1", n1, n2)
	}
	if b, _ := tr.Binding(fd.srv.URL); b.Replica != "r2" {
		t.Fatalf("bound to %q, want r2", b.Replica)
	}
	fd.mu.Lock()
	hints := append([]string(nil), fd.hints...)
	fd.mu.Unlock()
	want := []string{" ", protocol.RebindUnreachable + " " + testGroup + "/r1"}
	if !slices.Equal(hints, want) {
		t.Fatalf("front door saw rebind hints %q, want %q (the client names the replica it could not reach)", hints, want)
	}
}

func TestFailureAfterSendingIsNotRetried(t *testing.T) {
	t.Parallel()
	r1, r2 := newFakeReplica(t, "r1", ""), newFakeReplica(t, "r2", "")
	fd := newFakeFrontDoor(t, r1)
	tr := newTransport(client.Options{})
	do(t, tr, http.MethodGet, fd.srv.URL+"/x", nil)

	r1.crash.Store(true) // runs the call, then drops the connection
	fd.setPick(always(r2))
	if _, _, err := tryDo(tr, http.MethodPost, fd.srv.URL+"/x", strings.NewReader("once")); err == nil {
		t.Fatal("call whose connection dropped succeeded")
	}
	if n1, n2, hits := len(r1.ran()), len(r2.ran()), fd.hitCount(); n1 != 2 || n2 != 0 || hits != 1 {
		t.Fatalf("r1 ran %d, r2 ran %d, front door hit %d; want 2, 0, 1 (no retry)", n1, n2, hits)
	}
	if _, ok := tr.Binding(fd.srv.URL); ok {
		t.Fatal("binding kept after a connection failure")
	}
	if code, got := do(t, tr, http.MethodGet, fd.srv.URL+"/x", nil); code != http.StatusOK || got != "r2:" {
		t.Fatalf("next call: %d %q, want 200 from r2", code, got)
	}
}

func TestReplica503DropsTheBinding(t *testing.T) {
	t.Parallel()
	r1, r2 := newFakeReplica(t, "r1", ""), newFakeReplica(t, "r2", "")
	fd := newFakeFrontDoor(t, r1, r2)
	tr := newTransport(client.Options{})
	do(t, tr, http.MethodGet, fd.srv.URL+"/x", nil)
	r1.unavailable.Store(1)
	if code, _ := do(t, tr, http.MethodGet, fd.srv.URL+"/x", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want the replica's 503 (it may have run: not retried)", code)
	}
	if _, ok := tr.Binding(fd.srv.URL); ok {
		t.Fatal("binding kept after a 503")
	}
	if code, got := do(t, tr, http.MethodGet, fd.srv.URL+"/x", nil); code != http.StatusOK || got != "r2:" {
		t.Fatalf("next call: %d %q, want 200 from r2", code, got)
	}
	if n := len(r1.ran()); n != 2 {
		t.Fatalf("r1 ran %d calls, want 2", n)
	}
}

func TestFrontDoor503(t *testing.T) {
	t.Parallel()
	t.Run("retried once from a known front door", func(t *testing.T) {
		t.Parallel()
		r1 := newFakeReplica(t, "r1", "")
		fd := newFakeFrontDoor(t, r1)
		tr := newTransport(client.Options{})
		do(t, tr, http.MethodGet, fd.srv.URL+"/x", nil)
		r1.rebinds.Store(1)
		fd.unavailable.Store(1)
		if code, got := do(t, tr, http.MethodPost, fd.srv.URL+"/x", strings.NewReader("b")); code != http.StatusOK || got != "r1:b" {
			t.Fatalf("%d %q, want 200 r1:b after one retry", code, got)
		}
		if hits := fd.hitCount(); hits != 3 {
			t.Fatalf("front door hit %d times, want 3", hits)
		}
		r1.rebinds.Store(1)
		fd.unavailable.Store(2)
		if code, _ := do(t, tr, http.MethodGet, fd.srv.URL+"/x", nil); code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503 when the retry is refused too", code)
		}
		if n := len(r1.ran()); n != 2 {
			t.Fatalf("r1 ran %d calls, want 2", n)
		}
	})
	t.Run("a proxied replica's 503 is not retried", func(t *testing.T) {
		t.Parallel()
		// The group was switched to per-request: the front door now
		// passes on a replica's 503 (no Fulcrum-Group), which may have
		// run the call.
		r1 := newFakeReplica(t, "r1", "")
		var hits atomic.Int32
		var proxied atomic.Bool
		door := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			hits.Add(1)
			if proxied.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Location", r1.base()+req.URL.RequestURI())
			w.Header().Set(protocol.HeaderGroup, testGroup)
			w.Header().Set(protocol.HeaderReplica, "r1")
			w.WriteHeader(http.StatusTemporaryRedirect)
		}))
		t.Cleanup(door.Close)
		tr := newTransport(client.Options{})
		do(t, tr, http.MethodGet, door.URL+"/x", nil)
		r1.rebinds.Store(1) // the replica sends the client back
		proxied.Store(true)
		if code, _ := do(t, tr, http.MethodGet, door.URL+"/x", nil); code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want the proxied 503", code)
		}
		if n := hits.Load(); n != 2 {
			t.Fatalf("front door hit %d times, want 2 (the 503 not retried)", n)
		}
	})
	t.Run("first contact is not retried", func(t *testing.T) {
		t.Parallel()
		r1 := newFakeReplica(t, "r1", "")
		fd := newFakeFrontDoor(t, r1)
		fd.unavailable.Store(1)
		tr := newTransport(client.Options{})
		if code, _ := do(t, tr, http.MethodGet, fd.srv.URL+"/x", nil); code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503", code)
		}
		if hits := fd.hitCount(); hits != 1 {
			t.Fatalf("front door hit %d times, want 1", hits)
		}
	})
}

func TestHopsAreBounded(t *testing.T) {
	t.Parallel()
	r1 := newFakeReplica(t, "r1", "")
	fd := newFakeFrontDoor(t, r1)
	r1.rebinds.Store(1 << 30) // sends every bound call back
	tr := newTransport(client.Options{MaxHops: 3})
	req, _ := http.NewRequest(http.MethodGet, fd.srv.URL+"/x", nil)
	_, err := tr.RoundTrip(req)
	if !errors.Is(err, client.ErrTooManyHops) {
		t.Fatalf("err %v, want ErrTooManyHops", err)
	}
	if n := len(r1.ran()); n != 0 {
		t.Fatalf("r1 ran %d calls, want 0", n)
	}
}

func TestBodyTooLargeToBufferReturnsTheRedirect(t *testing.T) {
	t.Parallel()
	r1 := newFakeReplica(t, "r1", "")
	fd := newFakeFrontDoor(t, r1)
	tr := newTransport(client.Options{MaxBufferedBody: 8})
	big := strings.Repeat("x", 100)
	req, _ := http.NewRequest(http.MethodPost, fd.srv.URL+"/echo", opaque{strings.NewReader(big)})
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("status %d, want the front door's 307 returned", resp.StatusCode)
	}
	if b, ok := tr.Binding(fd.srv.URL); !ok || b.Replica != "r1" {
		t.Fatal("the binding was not kept for later calls")
	}
	// Bound now, a big body goes straight to the replica.
	code, got := do(t, tr, http.MethodPost, fd.srv.URL+"/echo", opaque{strings.NewReader(big)})
	if code != http.StatusOK || got != "r1:"+big {
		t.Fatalf("bound call: %d, %d bytes", code, len(got))
	}
}

func TestOtherRedirectsAreLeftToTheCaller(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	tr := newTransport(client.Options{})
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/x", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "/elsewhere" {
		t.Fatalf("got %d %q, want the 307 as is", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestConcurrentCallsRunExactlyOnce(t *testing.T) {
	t.Parallel()
	replicas := []*fakeReplica{newFakeReplica(t, "r1", ""), newFakeReplica(t, "r2", ""), newFakeReplica(t, "r3", "")}
	sentBack := &sync.Map{}
	for _, r := range replicas {
		r.rebindOnce = sentBack
	}
	fd := newFakeFrontDoor(t, replicas...)
	hc := client.NewHTTPClient(client.Options{Logger: slog.New(slog.DiscardHandler)})
	const workers, perWorker = 16, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				payload := fmt.Sprintf("w%d-%d", w, i)
				var body io.Reader = strings.NewReader(payload)
				if i%2 == 1 {
					body = opaque{bytes.NewBufferString(payload)}
				}
				url := fd.srv.URL + "/echo"
				if i%5 == 0 {
					url += "?rebind=" + payload
				}
				code, got, err := tryDo(hc.Transport, http.MethodPost, url, body)
				if err != nil || code != http.StatusOK || !strings.HasSuffix(got, ":"+payload) {
					t.Errorf("%s: %d %q %v", payload, code, got, err)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for _, r := range replicas {
		for _, c := range r.ran() {
			seen[c.Body]++
		}
	}
	rebound := 0
	sentBack.Range(func(any, any) bool { rebound++; return true })
	if rebound == 0 {
		t.Error("no call was sent back")
	}
	if len(seen) != workers*perWorker {
		t.Fatalf("%d distinct calls ran, want %d", len(seen), workers*perWorker)
	}
	for body, n := range seen {
		if n != 1 {
			t.Errorf("call %s ran %d times", body, n)
		}
	}
}

// Headers set by the caller travel with the call; a stale Fulcrum-Binding
// set by the caller is replaced.
func TestCallerHeadersAreKept(t *testing.T) {
	t.Parallel()
	r1 := newFakeReplica(t, "r1", "")
	fd := newFakeFrontDoor(t, r1)
	headers := make(chan http.Header, 1)
	r1.wrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			headers <- r.Header.Clone()
			next.ServeHTTP(w, r)
		})
	})
	tr := newTransport(client.Options{})
	req, _ := http.NewRequest(http.MethodGet, fd.srv.URL+"/x", nil)
	req.Header.Set("Authorization", "Bearer app")
	req.Header.Set(protocol.HeaderBinding, "stale/r9")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := <-headers
	if got.Get("Authorization") != "Bearer app" || got.Get(protocol.HeaderBinding) != "g/r1" {
		t.Fatalf("replica got headers %v", got)
	}
	if req.Header.Get(protocol.HeaderBinding) != "stale/r9" || req.URL.Host != strings.TrimPrefix(fd.srv.URL, "http://") {
		t.Fatal("the caller's request was modified")
	}
}
