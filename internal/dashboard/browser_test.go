package dashboard_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// settle is how long the test lets the clients run before the
// screenshot; a longer run (go test -run TestDashboardInBrowser
// -settle=40s) shows the loads converged, for docs/dashboard.png.
var settle = flag.Duration("settle", 3*time.Second, "how long the demo runs before the dashboard's screenshot")

const (
	chromium   = "/usr/bin/chromium"
	adminToken = "dashboard-test-token"
	// uiInstance is the balancer's instance name: its event ids'
	// prefix.
	uiInstance = "fulcrum-ui"
)

// TestDashboardInBrowser drives the dashboard in headless Chromium against
// a real balancer with three prime replicas (real listeners, real
// monitors) and clients: the token asked once, the replica rows and their
// live figures and charts, a killed replica's row turning down, a drain by
// keyboard and a strategy change through the page (the API agrees with
// both), an API error shown in the API's words, no horizontal scrolling
// at 360 px, and a screenshot as a test artifact.
func TestDashboardInBrowser(t *testing.T) {
	needChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	admin := startBalancer(t)
	var reps []*replica
	for range 3 {
		reps = append(reps, startReplica(t, admin))
	}
	st := admin.status(t)
	for _, r := range reps {
		r.id = st.replicaAt(t, r.url).ID
	}

	bctx := browser(ctx, t)
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll := func(what, js string) {
		t.Helper()
		run(what, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	}
	row := func(id string) string { return `document.querySelector('tr[data-replica="` + id + `"]')` }

	run("open the page", chromedp.EmulateViewport(1400, 1000), chromedp.Navigate(admin.url+"/ui/"))
	poll("the page asks for the token", `!document.getElementById("login").hidden && document.activeElement.id === "token"`)
	run("give the token", chromedp.SendKeys("#token", adminToken+"\r"))

	poll("three replica rows", `document.querySelectorAll('section[data-group="prime"] tr[data-replica]').length === 3`)
	// The clients start once the page follows the stream: it sees the
	// loads converge (advisories, planned moves, clients moving).
	poll("the stream is live", `document.getElementById("conn").textContent.startsWith("live")`)
	startClients(ctx, t, st.Advertise, []float64{100, 100, 50, 50, 50, 50})
	for _, r := range reps {
		poll("live calls/s of "+r.id, row(r.id)+`.querySelector(".rps").textContent !== "–" && `+row(r.id)+`.dataset.state === "active"`)
	}
	poll("a chart per replica", `document.querySelectorAll('section[data-group="prime"] .chart canvas').length === 3`)
	poll("the stream is live", `document.getElementById("conn").textContent.startsWith("live")`)
	poll("the group's facts", `document.querySelector('[data-fact="binding"] dd').textContent === "on-demand" && document.querySelector('[data-fact="strategy"] dd').textContent === "least-loaded"`)

	// A dropped stream: the page reconnects with the token in the header
	// (never in the URL) and resumes after the last event it saw.
	admin.streams.drop()
	poll("the page notices the drop", `document.getElementById("conn").textContent.startsWith("disconnected")`)
	poll("and follows the stream again", `document.getElementById("conn").textContent.startsWith("live")`)
	reqs, urls := admin.streams.seen()
	if len(reqs) < 2 {
		t.Fatalf("%d requests of /v1/events, want a reconnect", len(reqs))
	}
	if id := reqs[0].Get("Last-Event-ID"); id != "" {
		t.Errorf("the first stream sent Last-Event-ID %q, want none", id)
	}
	if id := reqs[1].Get("Last-Event-ID"); !regexp.MustCompile(`^` + uiInstance + `-[1-9][0-9]*$`).MatchString(id) {
		t.Errorf("the reconnect sent Last-Event-ID %q, want the id of the last event seen (%s-<seq>)", id, uiInstance)
	}
	for i, h := range reqs {
		if h.Get("Authorization") != "Bearer "+adminToken || strings.Contains(urls[i], adminToken) {
			t.Errorf("stream request %d: Authorization %q, URL %q: want the token in the header only", i, h.Get("Authorization"), urls[i])
		}
	}

	// Let the clients run and the charts fill, then keep a picture.
	settled := time.NewTimer(*settle)
	select {
	case <-settled.C:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	poll("the charts have points", `Array.from(document.querySelectorAll(".chart")).every(c => c.querySelectorAll("canvas").length > 0)`)
	dir := os.Getenv("FULCRUM_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	screenshot(bctx, t, filepath.Join(dir, "dashboard.png"))

	// Kill a replica (after the reconnect: the resumed stream carries
	// it): its listener closes and its monitor stops without
	// deregistering, as under kill -9. Health checks fail: down.
	reps[2].kill(t)
	poll("the killed replica's row turns down", row(reps[2].id)+`.dataset.state === "down" && `+row(reps[2].id)+`.querySelector(".state").textContent === "down"`)
	poll("its going down is logged", `Array.from(document.querySelectorAll("#log li")).some(li => li.textContent.includes("`+reps[2].id+`: active → down"))`)

	// Drain one from the keyboard.
	drain := `tr[data-replica="` + reps[0].id + `"] button[data-action="drain"]`
	run("drain by keyboard", chromedp.Focus(drain), chromedp.KeyEvent("\r"))
	poll("the drained replica's row says draining", row(reps[0].id)+`.dataset.state === "draining"`)
	if got := admin.status(t).replicaAt(t, reps[0].url).State; got != "draining" {
		t.Fatalf("after the page drained %s the API says %q, want draining", reps[0].id, got)
	}

	// Change the strategy through the page.
	form := `section[data-group="prime"] form.change`
	run("change the strategy",
		chromedp.SetValue(form+` input[name="strategy"]`, "round-robin"),
		chromedp.Click(form+` button[type="submit"]`))
	poll("the page shows round-robin", `document.querySelector('[data-fact="strategy"] dd').textContent === "round-robin"`)
	if got := admin.status(t).Strategy; got != "round-robin" {
		t.Fatalf("after the page changed the strategy the API says %q, want round-robin", got)
	}

	// An invalid param: the page shows the API's own words.
	bad := `{"dampening": 1.5}`
	apiMsg := admin.patchError(t, `{"strategy": "least-loaded", "params": `+bad+`}`)
	run("send an invalid param",
		chromedp.SetValue(form+` input[name="strategy"]`, "least-loaded"),
		chromedp.SetValue(form+` textarea[name="params"]`, bad),
		chromedp.Click(form+` button[type="submit"]`))
	msg, _ := json.Marshal(apiMsg)
	poll("the API's error is shown", `document.getElementById("errors").textContent.includes(`+string(msg)+`)`)
	if got := admin.status(t).Strategy; got != "round-robin" {
		t.Fatalf("after a refused change the API says %q, want round-robin still", got)
	}

	// A phone's width: everything fits without scrolling sideways.
	run("a 360 px screen", chromedp.EmulateViewport(360, 800))
	poll("no horizontal scrolling at 360 px", `document.documentElement.scrollWidth <= 360 && `+row(reps[1].id)+`.getBoundingClientRect().width <= 360`)

	screenshot(bctx, t, filepath.Join(dir, "dashboard-360px.png"))
}

// needChromium skips t without Debian's chromium, or fails it with
// CI=true.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is needed for the dashboard test (apt-get install chromium): %v", err)
		}
		t.Skipf("no %s (apt-get install chromium): %v", chromium, err)
	}
}

// screenshot saves the whole page as a PNG at path.
func screenshot(ctx context.Context, t *testing.T, path string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the dashboard: %s", path)
}

// browser starts headless Chromium with a fresh profile and returns a
// tab's context.
func browser(ctx context.Context, t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelTab := chromedp.NewContext(actx)
	con := &console{}
	msgs := chromedp.Console(bctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			con.add(m)
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		<-done
		if bad := con.bad(); len(bad) > 0 {
			t.Errorf("the page reported errors:\n%s", strings.Join(bad, "\n"))
		}
		if t.Failed() {
			t.Logf("the page's console:\n%s", strings.Join(con.all(), "\n"))
		}
	})
	return bctx
}

// console keeps what the page wrote to its console.
type console struct {
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

func (c *console) add(m chromedp.ConsoleMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, m)
}

func (c *console) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.msgs))
	for _, m := range c.msgs {
		out = append(out, m.String())
	}
	return out
}

// bad are the uncaught exceptions and the requests the page's own
// Content-Security-Policy refused.
func (c *console) bad() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			out = append(out, m.String())
		}
	}
	return out
}

// adminAPI is a running balancer's admin API.
type adminAPI struct {
	url string
	hc  *http.Client
	// streams sees every GET /v1/events.
	streams streams
}

// streams records the requests of GET /v1/events and can end the one
// being served, as a dropped connection would.
type streams struct {
	mu   sync.Mutex
	reqs []http.Header
	urls []string
	end  context.CancelFunc
}

func (s *streams) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/events" {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			s.mu.Lock()
			s.reqs = append(s.reqs, r.Header.Clone())
			s.urls = append(s.urls, r.URL.String())
			s.end = cancel
			s.mu.Unlock()
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
	})
}

// drop ends the stream being served.
func (s *streams) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end != nil {
		s.end()
	}
}

func (s *streams) seen() ([]http.Header, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.reqs...), append([]string(nil), s.urls...)
}

// startBalancer runs a balancer with an admin token and the group
// "prime" (on-demand, least-loaded, fast reports and health checks).
func startBalancer(t *testing.T) *adminAPI {
	t.Helper()
	a, b := serveBalancer(t, balancer.Options{})
	_, _, err := b.PutGroup(protocol.Group{
		Name: "prime", Protocol: protocol.ProtocolHTTP, FrontDoor: "127.0.0.1:0",
		Binding: protocol.OnDemand, Strategy: "least-loaded",
		ReportInterval: protocol.Duration(200 * time.Millisecond),
		Health: protocol.Health{Path: "/healthz", Interval: protocol.Duration(100 * time.Millisecond),
			Timeout: protocol.Duration(100 * time.Millisecond), Rise: 1, Fall: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// serveBalancer runs a single-node balancer named uiInstance with opts
// (its store, logger, instance and admin address filled in) and its admin
// API with the admin token, on a real socket, until the test ends.
func serveBalancer(t *testing.T, opts balancer.Options) (*adminAPI, *balancer.Balancer) {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &adminAPI{url: "http://" + ln.Addr().String(), hc: &http.Client{Timeout: 10 * time.Second}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.Store, opts.Logger, opts.Instance, opts.AdminURL, opts.AdminAddr = st, log, uiInstance, a.url, ln.Addr().String()
	b, err := balancer.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: a.streams.wrap(api.New(b, api.Options{AdminToken: adminToken, Logger: log})), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
		_ = srv.Shutdown(ctx)
		st.Close()
	})
	return a, b
}

// do sends an admin request and decodes the answer into v (status 2xx) or
// returns the error body's message.
func (a *adminAPI) do(t *testing.T, method, path, body string, v any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := a.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &e); err != nil || e.Error.Message == "" {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
		return resp.StatusCode, e.Error.Message
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode, ""
}

type groupStatus protocol.GroupStatus

func (a *adminAPI) status(t *testing.T) groupStatus {
	t.Helper()
	var st groupStatus
	if code, msg := a.do(t, "GET", "/v1/groups/prime", "", &st); msg != "" {
		t.Fatalf("GET /v1/groups/prime: %d %s", code, msg)
	}
	return st
}

// patchError sends a PATCH that must fail and returns the API's message.
func (a *adminAPI) patchError(t *testing.T, body string) string {
	t.Helper()
	code, msg := a.do(t, "PATCH", "/v1/groups/prime", body, nil)
	if msg == "" {
		t.Fatalf("PATCH %s: %d, want an error", body, code)
	}
	return msg
}

func (st groupStatus) replicaAt(t *testing.T, url string) protocol.ReplicaStatus {
	t.Helper()
	for _, r := range st.Replicas {
		if r.Address == url {
			return r
		}
	}
	t.Fatalf("no replica at %s in %+v", url, st.Replicas)
	return protocol.ReplicaStatus{}
}

// replica is a prime server on a real listener with a monitor.
type replica struct {
	url, id string
	srv     *http.Server
	mon     *monitor.Monitor
	once    sync.Once
}

func startReplica(t *testing.T, admin *adminAPI) *replica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{url: "http://" + ln.Addr().String()}
	r.mon, err = monitor.New(monitor.Options{Admin: admin.url, Group: "prime", Address: r.url, JoinToken: adminToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = &http.Server{Handler: r.mon.Handler(backend.NewPrime(func() string { return r.url })), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	if err := r.mon.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.mon.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.kill(t) })
	return r
}

// kill closes the replica's listener and connections and stops its
// monitor without deregistering (the context is already done), as kill -9
// would.
func (r *replica) kill(t *testing.T) {
	r.once.Do(func() {
		_ = r.srv.Close()
		done, cancel := context.WithCancel(context.Background())
		cancel()
		_ = r.mon.Close(done)
	})
}

// startClients runs one client per rate, 250 ms apart, each with its own
// binding, until the test ends.
func startClients(ctx context.Context, t *testing.T, frontDoor string, rates []float64) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for i, rate := range rates {
		wg.Go(func() {
			start := time.NewTimer(time.Duration(i) * 250 * time.Millisecond) // one after another, as fulcrum demo starts them
			defer start.Stop()
			select {
			case <-ctx.Done():
				return
			case <-start.C:
			}
			tr := client.NewTransport(client.Options{})
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
			defer tick.Stop()
			url := fmt.Sprintf("%s/prime/%d", frontDoor, 1_000_003)
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				_, _ = backend.CallPrime(ctx, hc, url)
			}
		})
	}
}
