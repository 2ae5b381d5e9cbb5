//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
)

// degradedDial is the instances' store.etcd.dial_timeout: an admin write
// must be answered within it (plus scheduling slack) when etcd is gone.
const degradedDial = time.Second

// Two fulcrum serve processes on a three-member etcd: A uses member 0
// only, B members 1 and 2. A cut off (member 0 stopped, B keeping a
// quorum): A's front door still proxies, reports are still answered, its
// GETs answer from memory, its admin writes get 503 store_unavailable
// naming etcd within the dial timeout (nothing applied), /readyz is 503
// naming etcd, fulcrum_store_up is 0; what B changes meanwhile is applied
// at A once member 0 is back, and A's writes work again. Then every
// member stopped: both instances serve, refuse writes and are not ready;
// all recover when etcd returns. The etcd metrics count A's requests.
func TestServeOnEtcdDegraded(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 180*time.Second)
	etcd := etcdtest.New(t, etcdtest.Options{Members: 3})
	m0, m1, m2 := etcd.Member(0), etcd.Member(1), etcd.Member(2)
	hc := apiClient(t)
	cfgFor := func(host, name string, eps ...string) string {
		return writeConfig(t, "admin: %s:0\ninstance: {name: %s}\nstore:\n  etcd:\n    endpoints: [%s]\n    prefix: /e2e-degraded/\n    dial_timeout: %v\n", host, name, strings.Join(eps, ", "), degradedDial)
	}
	a := startServe(t, "--config", cfgFor("127.0.0.1", "fulcrum-a", m0.ClientURL))
	b := startServe(t, "--config", cfgFor("127.0.0.2", "fulcrum-b", m1.ClientURL, m2.ClientURL))

	mustCall(ctx, t, hc, http.MethodPut, a.admin+"/v1/groups/deg", map[string]any{
		"front_door": "127.0.0.1:0", "binding": "per-request", "strategy": "round-robin",
	}, http.StatusCreated, nil)
	_, prime1 := startPrime(t, "--listen", "127.0.0.1:0")
	var reg1 struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	mustCall(ctx, t, hc, http.MethodPost, a.admin+"/v1/groups/deg/replicas", map[string]any{"address": prime1}, http.StatusCreated, &reg1)
	atA := waitGroup(ctx, t, hc, a.admin, "deg", activeReplica(reg1.ID))
	atB := waitGroup(ctx, t, hc, b.admin, "deg", activeReplica(reg1.ID))

	// A cut off from etcd; B goes on with members 1 and 2.
	m0.Stop()
	stopped := time.Now()
	waitReady(ctx, t, hc, a.admin, false, "etcd at "+m0.ClientURL)
	t.Logf("A not ready %v after its etcd member stopped", time.Since(stopped).Round(time.Millisecond))
	checkDegraded(ctx, t, hc, a, atA, reg1.ID, reg1.Token, m0.ClientURL)
	if up := metricValue(ctx, t, hc, a.admin, "fulcrum_store_up"); up != 0 {
		t.Errorf("A's fulcrum_store_up = %v while cut off, want 0", up)
	}
	waitReady(ctx, t, hc, b.admin, true, "")

	// Changes at B while A is cut off.
	mustCall(ctx, t, hc, http.MethodPatch, b.admin+"/v1/groups/deg", map[string]any{"strategy": "random"}, http.StatusOK, nil)
	_, prime2 := startPrime(t, "--listen", "127.0.0.1:0")
	var reg2 struct {
		ID string `json:"id"`
	}
	mustCall(ctx, t, hc, http.MethodPost, b.admin+"/v1/groups/deg/replicas", map[string]any{"address": prime2}, http.StatusCreated, &reg2)

	// A back: ready, B's changes applied, its own writes work.
	if err := m0.Start(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitReady(ctx, t, hc, a.admin, true, "")
	t.Logf("A ready %v after its etcd member started", time.Since(back).Round(time.Millisecond))
	waitGroup(ctx, t, hc, a.admin, "deg", func(g groupStatus) error {
		if g.Strategy != "random" {
			return fmt.Errorf("strategy at A %q, want random (changed at B while A was cut off)", g.Strategy)
		}
		return activeReplica(reg2.ID)(g)
	})
	mustCall(ctx, t, hc, http.MethodPost, a.admin+"/v1/groups/deg/replicas/"+reg2.ID+"/drain", nil, http.StatusOK, nil)
	waitGroup(ctx, t, hc, b.admin, "deg", func(g groupStatus) error {
		if r, ok := g.replica(reg2.ID); !ok || r.State != "draining" {
			return fmt.Errorf("replica %s at B: %+v, want draining (drained at A once etcd was back)", reg2.ID, r)
		}
		return nil
	})

	// Every member stopped: both serve, neither writes nor is ready. A
	// write sent at once (before B may know etcd is gone) waits at most
	// the dial timeout, gets the same 503, and is undone.
	for _, m := range etcd.Members() {
		m.Stop()
	}
	start := time.Now()
	status, body := send(ctx, t, hc, http.MethodPost, b.admin+"/v1/groups/deg/replicas/"+reg1.ID+"/drain", "", "", nil)
	if took := time.Since(start); status != http.StatusServiceUnavailable || !bytes.Contains(body, []byte("store_unavailable")) || took > degradedDial+time.Second {
		t.Errorf("drain at B as etcd stopped: %d %s after %v; want 503 store_unavailable within %v", status, body, took, degradedDial+time.Second)
	}
	if g, err := getGroup(ctx, hc, b.admin, "deg"); err != nil {
		t.Fatal(err)
	} else if r, _ := g.replica(reg1.ID); r.State != "active" {
		t.Errorf("replica %s at B after a drain etcd did not take: %s, want active", reg1.ID, r.State)
	}
	waitReady(ctx, t, hc, a.admin, false, "etcd at "+m0.ClientURL)
	waitReady(ctx, t, hc, b.admin, false, "etcd at "+m1.ClientURL+","+m2.ClientURL)
	checkDegraded(ctx, t, hc, b, atB, reg1.ID, reg1.Token, m1.ClientURL+","+m2.ClientURL)
	if ans := getPrime(ctx, t, hc, atA.Advertise+"/prime/7919"); ans.ServedBy != prime1 {
		t.Errorf("call through A's front door with etcd stopped served by %q, want %s", ans.ServedBy, prime1)
	}
	for _, m := range etcd.Members() {
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
	}
	waitReady(ctx, t, hc, a.admin, true, "")
	waitReady(ctx, t, hc, b.admin, true, "")
	mustCall(ctx, t, hc, http.MethodPost, b.admin+"/v1/groups/deg/replicas/"+reg2.ID+"/activate", nil, http.StatusOK, nil)
	waitGroup(ctx, t, hc, a.admin, "deg", activeReplica(reg2.ID))

	// A's etcd metrics.
	for _, name := range []string{
		`fulcrum_store_etcd_writes_total{op="put"}`,
		`fulcrum_store_etcd_writes_total{op="txn"}`,
		`fulcrum_store_etcd_request_seconds_count{op="get"}`,
		`fulcrum_store_etcd_request_seconds_count{op="list"}`,
		`fulcrum_store_etcd_request_seconds_count{op="watch_open"}`,
	} {
		if v := metricValue(ctx, t, hc, a.admin, name); v <= 0 {
			t.Errorf("A's %s = %v, want > 0", name, v)
		}
	}
	if up := metricValue(ctx, t, hc, a.admin, "fulcrum_store_up"); up != 1 {
		t.Errorf("A's fulcrum_store_up = %v with etcd back, want 1", up)
	}
	if lag := metricValue(ctx, t, hc, a.admin, "fulcrum_store_watch_lag_seconds"); lag < 0 {
		t.Errorf("A's fulcrum_store_watch_lag_seconds = %v, want a duration", lag)
	}
}

// checkDegraded checks instance p while its etcd (at eps) cannot be
// reached: its front door proxies, a report is answered, its GET answers
// from memory, and its admin writes get 503 store_unavailable naming etcd
// with Retry-After, within the dial timeout, changing nothing.
func checkDegraded(ctx context.Context, t *testing.T, hc *http.Client, p *balancerProc, g groupStatus, id, token, eps string) {
	t.Helper()
	if ans := getPrime(ctx, t, hc, g.Advertise+"/prime/7919"); ans.ServedBy == "" {
		t.Errorf("call through %s's front door with etcd unreachable: no replica answered", p.admin)
	}
	// A report is taken by the group's analyzer leader while its session
	// lasts; an instance that does not lead the group sends it on (307
	// not_leader) or, with no leader known, answers 503 no_leader
	// (docs/cluster.md, Leaders). Never a 401: the token is known here.
	noRedirects := *hc
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	status, body := send(ctx, t, &noRedirects, http.MethodPost, p.admin+"/v1/report", token, `{"load":0.5}`, nil)
	switch {
	case status == http.StatusOK:
	case status == http.StatusTemporaryRedirect && bytes.Contains(body, []byte(`"not_leader"`)):
	case status == http.StatusServiceUnavailable && bytes.Contains(body, []byte(`"no_leader"`)):
	default:
		t.Errorf("report to %s with etcd unreachable: %d %s, want 200 (the leader), 307 not_leader or 503 no_leader", p.admin, status, body)
	}
	for _, w := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/groups/deg/replicas/" + id + "/drain", ""},
		{http.MethodPatch, "/v1/groups/deg", `{"strategy":"least-loaded"}`},
		{http.MethodPost, "/v1/groups/deg/replicas", `{"address":"http://127.0.0.1:1"}`},
		{http.MethodDelete, "/v1/groups/deg", ""},
	} {
		hdr := http.Header{}
		start := time.Now()
		status, body := send(ctx, t, hc, w.method, p.admin+w.path, "", w.body, hdr)
		took := time.Since(start)
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(body, &e)
		if status != http.StatusServiceUnavailable || e.Error.Code != "store_unavailable" || !strings.Contains(e.Error.Message, "etcd at "+eps) {
			t.Errorf("%s %s with etcd unreachable: %d %s; want 503 store_unavailable naming etcd at %s", w.method, w.path, status, body, eps)
		}
		if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("%s %s: Retry-After %q, want seconds", w.method, w.path, hdr.Get("Retry-After"))
		}
		if bound := degradedDial + time.Second; took > bound {
			t.Errorf("%s %s answered after %v, want within %v", w.method, w.path, took, bound)
		}
	}
	got, err := getGroup(ctx, hc, p.admin, "deg")
	if err != nil {
		t.Fatalf("GET with etcd unreachable: %v", err)
	}
	if r, ok := got.replica(id); !ok || r.State != "active" {
		t.Errorf("replica %s after a refused drain: %+v, want active (nothing applied)", id, r)
	}
	if got.Strategy == "least-loaded" {
		t.Errorf("strategy after a refused PATCH: %s, want unchanged", got.Strategy)
	}
	for _, r := range got.Replicas {
		if r.Address == "http://127.0.0.1:1" {
			t.Errorf("a refused registration is in the group: %+v", r)
		}
	}
}

// waitReady polls admin's /readyz until it answers 200 (ready) or 503
// with a message containing want (not ready).
func waitReady(ctx context.Context, t *testing.T, hc *http.Client, admin string, ready bool, want string) {
	t.Helper()
	var last string
	tick := time.NewTicker(20 * time.Millisecond) // the poll's pace
	defer tick.Stop()
	for {
		status, body, err := call(ctx, hc, http.MethodGet, admin+"/readyz", nil)
		if err == nil && ready && status == http.StatusOK {
			return
		}
		if err == nil && !ready && status == http.StatusServiceUnavailable && bytes.Contains(body, []byte(want)) {
			return
		}
		last = fmt.Sprintf("%d %s %v", status, body, err)
		if ctx.Err() != nil {
			t.Fatalf("%s/readyz: %s; want ready=%v (%s)", admin, last, ready, want)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// send makes a request with an optional bearer token and raw JSON body,
// copying the answer's headers into hdr (when not nil).
func send(ctx context.Context, t *testing.T, hc *http.Client, method, url, token, body string, hdr http.Header) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for k, v := range resp.Header {
		if hdr != nil {
			hdr[k] = v
		}
	}
	return resp.StatusCode, b
}

// metricValue reads one sample of admin's /metrics (name with its labels,
// as printed); -1 when absent.
func metricValue(ctx context.Context, t *testing.T, hc *http.Client, admin, name string) float64 {
	t.Helper()
	status, body, err := call(ctx, hc, http.MethodGet, admin+"/metrics", nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s/metrics: %d %v", admin, status, err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}
