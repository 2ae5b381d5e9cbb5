package backend_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
)

// startCounter serves a fresh counter over HTTP on a loopback port.
func startCounter(t *testing.T) (*backend.Counter, *httptest.Server) {
	t.Helper()
	c := &backend.Counter{}
	srv := httptest.NewServer(backend.NewCounterHandler(c, backend.CounterOptions{}))
	t.Cleanup(srv.Close)
	return c, srv
}

// do makes one request and returns the status and body.
func do(t *testing.T, method, url string, body []byte, header map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func decodeValue(t *testing.T, b []byte) map[string]int64 {
	t.Helper()
	var v map[string]int64
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	return v
}

// N concurrent increments over real connections give exactly N, each value
// from 1 to N answered once.
func TestCounterConcurrentIncrements(t *testing.T) {
	t.Parallel()
	_, srv := startCounter(t)
	const workers, each = 8, 50
	values := make(chan int64, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				status, b := do(t, "POST", srv.URL+"/increment", nil, nil)
				if status != http.StatusOK {
					t.Errorf("POST /increment: %d %s", status, b)
					return
				}
				values <- decodeValue(t, b)["value"]
			}
		})
	}
	wg.Wait()
	close(values)
	seen := map[int64]bool{}
	for v := range values {
		if seen[v] {
			t.Errorf("value %d answered twice", v)
		}
		seen[v] = true
	}
	for v := int64(1); v <= workers*each; v++ {
		if !seen[v] {
			t.Errorf("value %d never answered", v)
		}
	}
	status, b := do(t, "GET", srv.URL+"/value", nil, nil)
	if got := decodeValue(t, b); status != http.StatusOK || got["value"] != workers*each || got["increments"] != workers*each {
		t.Fatalf("GET /value = %d %s, want value and increments %d", status, b, workers*each)
	}
	status, b = do(t, "POST", srv.URL+"/increment?by=10", nil, nil)
	if got := decodeValue(t, b); status != http.StatusOK || got["value"] != workers*each+10 {
		t.Fatalf("POST /increment?by=10 = %d %s, want value %d", status, b, workers*each+10)
	}
}

// The state read from one counter and written into a fresh one reproduces
// it byte for byte; with the determinism headers two counters given the
// same requests reach the same state, whose time is the header's.
func TestCounterStateTransfer(t *testing.T) {
	t.Parallel()
	_, a := startCounter(t)
	_, b := startCounter(t)
	for i := range 5 {
		h := map[string]string{
			backend.HeaderTime: fmt.Sprintf("2026-11-27T10:00:0%d.123456789Z", i),
			backend.HeaderSeed: fmt.Sprint(1000 + i),
		}
		for _, srv := range []*httptest.Server{a, b} {
			if status, body := do(t, "POST", srv.URL+"/increment", nil, h); status != http.StatusOK {
				t.Fatalf("POST /increment: %d %s", status, body)
			}
		}
	}
	_, stateA := do(t, "GET", a.URL+"/fulcrum/state", nil, nil)
	_, stateB := do(t, "GET", b.URL+"/fulcrum/state", nil, nil)
	if !bytes.Equal(stateA, stateB) {
		t.Fatalf("same requests, same stamps, different states:\n%s\n%s", stateA, stateB)
	}
	st, err := backend.ParseCounterState(stateA)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 27, 10, 0, 4, 123456789, time.UTC)
	if st.Value != 5 || st.Increments != 5 || !st.LastChanged.Equal(want) || st.LastID == 0 {
		t.Fatalf("state %+v, want value 5, increments 5, last_changed %v and an id", st, want)
	}

	_, fresh := startCounter(t)
	if status, body := do(t, "PUT", fresh.URL+"/fulcrum/state", stateA, nil); status != http.StatusNoContent {
		t.Fatalf("PUT /fulcrum/state: %d %s", status, body)
	}
	req, _ := http.NewRequest("GET", fresh.URL+"/fulcrum/state", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != backend.StateContentType {
		t.Errorf("state content type %q, want %q", ct, backend.StateContentType)
	}
	if !bytes.Equal(got, stateA) {
		t.Fatalf("fresh counter's state after PUT:\n%s\nwant\n%s", got, stateA)
	}
	status, body := do(t, "POST", fresh.URL+"/increment", nil, nil)
	if v := decodeValue(t, body)["value"]; status != http.StatusOK || v != 6 {
		t.Fatalf("increment after PUT: %d %s, want value 6", status, body)
	}
}

// Bad state bodies get 400 (413 when too large) naming what is wrong, and
// leave the state as it was.
func TestCounterBadState(t *testing.T) {
	t.Parallel()
	_, srv := startCounter(t)
	do(t, "POST", srv.URL+"/increment", nil, nil)
	_, before := do(t, "GET", srv.URL+"/fulcrum/state", nil, nil)
	good := `"value":1,"increments":1,"last_changed":"2026-11-27T10:00:00Z","last_id":7`
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"empty", ``, 400, "EOF"},
		{"not JSON", `garbage`, 400, "invalid character"},
		{"array", `[1,2]`, 400, "want a JSON object"},
		{"missing field", `{"value":1,"increments":1,"last_changed":"2026-11-27T10:00:00Z"}`, 400, `field "last_id" missing`},
		{"null field", `{"value":null,"increments":1,"last_changed":"2026-11-27T10:00:00Z","last_id":7}`, 400, `field "value" missing (or null)`},
		{"unknown field", `{` + good + `,"extra":1}`, 400, `unknown field "extra"`},
		{"negative increments", `{"value":1,"increments":-1,"last_changed":"2026-11-27T10:00:00Z","last_id":7}`, 400, `field "increments": JSON number -1, want an integer in [0, 2^64)`},
		{"string value", `{"value":"1","increments":1,"last_changed":"2026-11-27T10:00:00Z","last_id":7}`, 400, `field "value": JSON string, want an integer in the int64 range`},
		{"bad time", `{"value":1,"increments":1,"last_changed":"yesterday","last_id":7}`, 400, `yesterday`},
		{"time past 9999 in UTC", `{"value":1,"increments":1,"last_changed":"9999-12-31T23:59:59-01:00","last_id":7}`, 400, `field "last_changed": 9999-12-31T23:59:59-01:00 is in UTC year 10000`},
		{"trailing data", `{` + good + `} {}`, 400, "data after the JSON object"},
		{"too large", `{"value":` + strings.Repeat("1", backend.MaxStateBytes) + `}`, 413, "more than 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := do(t, "PUT", srv.URL+"/fulcrum/state", []byte(tc.body), nil)
			var e struct {
				Error struct{ Code, Field, Message string }
			}
			_ = json.Unmarshal(body, &e)
			if status != tc.status || !strings.Contains(e.Error.Message, tc.want) || e.Error.Field != "body" {
				t.Fatalf("PUT %q: %d %s, want %d naming the body and %q", tc.body, status, body, tc.status, tc.want)
			}
		})
	}
	_, after := do(t, "GET", srv.URL+"/fulcrum/state", nil, nil)
	if !bytes.Equal(before, after) {
		t.Fatalf("state changed by refused PUTs:\n%s\nwas\n%s", after, before)
	}
}

// Bad increments are refused with the parameter or header named, and count
// nothing.
func TestCounterBadIncrement(t *testing.T) {
	t.Parallel()
	_, srv := startCounter(t)
	for _, tc := range []struct {
		name, query string
		header      map[string]string
		want        string
	}{
		{"by zero", "?by=0", nil, `by: invalid value "0", must be an integer in [1, 2147483648]`},
		{"by word", "?by=two", nil, `by: invalid value "two"`},
		{"by empty", "?by=", nil, `by: invalid value ""`},
		{"bad time", "", map[string]string{backend.HeaderTime: "10:00"}, `header Fulcrum-Time: invalid value "10:00", must be an RFC 3339 time`},
		{"time past 9999 in UTC", "", map[string]string{backend.HeaderTime: "9999-12-31T23:59:59-01:00"}, `header Fulcrum-Time: invalid value "9999-12-31T23:59:59-01:00"`},
		{"bad seed", "", map[string]string{backend.HeaderSeed: "-1"}, `header Fulcrum-Seed: invalid value "-1", must be a decimal integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := do(t, "POST", srv.URL+"/increment"+tc.query, nil, tc.header)
			if status != http.StatusBadRequest || !strings.Contains(string(body), jsonEscape(tc.want)) {
				t.Fatalf("POST /increment%s: %d %s, want 400 with %q", tc.query, status, body, tc.want)
			}
		})
	}
	if _, body := do(t, "GET", srv.URL+"/value", nil, nil); decodeValue(t, body)["increments"] != 0 {
		t.Fatalf("refused increments counted: %s", body)
	}
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// forwardProxy is a plain HTTP forward proxy that records the URL of every
// request it forwards.
type forwardProxy struct {
	mu   sync.Mutex
	urls []string
}

func (p *forwardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !r.URL.IsAbs() {
		http.Error(w, "not a proxy request", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.urls = append(p.urls, r.Method+" "+r.URL.String())
	p.mu.Unlock()
	out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// The relay calls the counter through the proxy for every increment, adds
// each answer to its own counter, and answers both values.
func TestRelayThroughProxy(t *testing.T) {
	t.Parallel()
	counter, next := startCounter(t)
	proxy := &forwardProxy{}
	proxySrv := httptest.NewServer(proxy)
	t.Cleanup(proxySrv.Close)
	proxyURL, _ := url.Parse(proxySrv.URL)
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	t.Cleanup(tr.CloseIdleConnections)
	own := &backend.Counter{}
	h, err := backend.NewRelayHandler(own, backend.RelayOptions{Next: next.URL + "/", Client: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	relay := httptest.NewServer(h)
	t.Cleanup(relay.Close)

	const n = 20
	var sumNext atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			status, body := do(t, "POST", relay.URL+"/increment", nil, nil)
			got := decodeValue(t, body)
			if status != http.StatusOK || got["next"] < 1 || got["value"] < got["next"] {
				t.Errorf("relay POST /increment: %d %s", status, body)
			}
			sumNext.Add(got["next"])
		})
	}
	wg.Wait()
	if want := int64(n * (n + 1) / 2); sumNext.Load() != want || own.State().Value != want || own.State().Increments != n {
		t.Fatalf("relay state %+v, sum of next values %d, want value %d from %d increments", own.State(), sumNext.Load(), want, n)
	}
	if st := counter.State(); st.Value != n {
		t.Fatalf("counter value %d, want %d", st.Value, n)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if len(proxy.urls) != n {
		t.Fatalf("proxy saw %d calls, want %d: %v", len(proxy.urls), n, proxy.urls)
	}
	for _, u := range proxy.urls {
		if u != "POST "+next.URL+"/increment" {
			t.Fatalf("proxy saw %q, want POST %s/increment", u, next.URL)
		}
	}
}

// A next tier that fails gets 502 naming it, and the relay's counter stays.
func TestRelayNextFails(t *testing.T) {
	t.Parallel()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	t.Cleanup(broken.Close)
	own := &backend.Counter{}
	h, err := backend.NewRelayHandler(own, backend.RelayOptions{Next: broken.URL})
	if err != nil {
		t.Fatal(err)
	}
	relay := httptest.NewServer(h)
	t.Cleanup(relay.Close)
	status, body := do(t, "POST", relay.URL+"/increment", nil, nil)
	if status != http.StatusBadGateway || !strings.Contains(string(body), "503 Service Unavailable") || !strings.Contains(string(body), broken.URL+"/increment") {
		t.Fatalf("relay with a failing next: %d %s, want 502 naming it", status, body)
	}
	if st := own.State(); st.Increments != 0 {
		t.Fatalf("relay counted a failed call: %+v", st)
	}
	for _, bad := range []string{"", "ftp://x", "http://", "http://h:1/?q=1", "127.0.0.1:80"} {
		if _, err := backend.NewRelayHandler(own, backend.RelayOptions{Next: bad}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("next %q: err %v, want one naming it", bad, err)
		}
	}
}
