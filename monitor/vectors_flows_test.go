package monitor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/vectortest"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// flowCase is a case of protocol/testdata/monitor_flows.json (see its
// README.md).
type flowCase struct {
	Name    string `json:"name"`
	Doc     string `json:"doc"`
	Monitor struct {
		Admins           []string         `json:"admins"`
		Token            string           `json:"token"`
		JoinToken        string           `json:"join_token"`
		Worker           *protocol.Worker `json:"worker"`
		RegisterAttempts int              `json:"register_attempts"`
	} `json:"monitor"`
	Parties map[string]struct {
		Refused   bool `json:"refused"`
		Responses []struct {
			Status  int               `json:"status"`
			Headers map[string]string `json:"headers"`
			Body    string            `json:"body"`
			Reset   bool              `json:"reset"`
		} `json:"responses"`
		Requests []flowRequest `json:"requests"`
	} `json:"parties"`
	Steps []struct {
		Do       string `json:"do"`
		Expect   string `json:"expect"`
		Status   int    `json:"status"`
		Advisory *struct {
			Advisory *string `json:"advisory"`
			Term     *string `json:"term"`
			Epoch    *string `json:"epoch"`
		} `json:"advisory"`
		IntervalMS *float64 `json:"interval_ms"`
		Doc        string   `json:"doc"`
	} `json:"steps"`
}

type flowRequest struct {
	Method     string            `json:"method"`
	Target     string            `json:"target"`
	Headers    map[string]string `json:"headers"`
	Absent     []string          `json:"absent"`
	JSON       map[string]any    `json:"json"`
	SameBodyAs *struct {
		Party string `json:"party"`
		Index int    `json:"index"`
	} `json:"same_body_as"`
}

// seenRequest is a request a party received.
type seenRequest struct {
	method, target string
	header         http.Header
	body           []byte
}

// flowParty is one scripted admin server of a case.
type flowParty struct {
	url  string
	srv  *http.Server
	mu   sync.Mutex
	seen []seenRequest
}

// TestVectorsMonitorFlows runs protocol/testdata/monitor_flows.json
// (shared with python/tests/test_vectors_monitor_flows.py): each party is
// a real local HTTP server answering its scripted responses in order (or
// a closed port), a real Monitor is driven by the steps (Start and
// WaitRegistered or Failed, ReportNow, Close), and every party must have
// seen exactly the requests it lists.
func TestVectorsMonitorFlows(t *testing.T) {
	t.Parallel()
	for _, tc := range vectortest.Load[flowCase](t, "monitor_flows") {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			runFlowCase(t, &tc)
		})
	}
}

func runFlowCase(t *testing.T, tc *flowCase) {
	parties := map[string]*flowParty{}
	lns := map[string]net.Listener{}
	for name, p := range tc.Parties {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		parties[name] = &flowParty{url: "http://" + ln.Addr().String()}
		if p.Refused {
			if len(p.Responses)+len(p.Requests) > 0 {
				t.Fatalf("party %s: a refused party has no responses or requests", name)
			}
			ln.Close() // a closed port: connections are refused
			continue
		}
		lns[name] = ln
	}
	subst := func(s string) string {
		for name, p := range parties {
			s = strings.ReplaceAll(s, "{"+name+"}", p.url)
		}
		return s
	}
	var served sync.WaitGroup
	for name, spec := range tc.Parties {
		if spec.Refused {
			continue
		}
		p := parties[name]
		ln := lns[name]
		p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			p.mu.Lock()
			n := len(p.seen)
			p.seen = append(p.seen, seenRequest{r.Method, r.URL.RequestURI(), r.Header.Clone(), body})
			p.mu.Unlock()
			w.Header().Set("Connection", "close")
			if n >= len(spec.Responses) {
				w.WriteHeader(599)
				return
			}
			resp := spec.Responses[n]
			if resp.Reset {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Errorf("party %s: hijack: %v", name, err)
					return
				}
				if tcp, ok := conn.(*net.TCPConn); ok {
					_ = tcp.SetLinger(0)
				}
				conn.Close()
				return
			}
			for k, v := range resp.Headers {
				w.Header().Set(k, subst(v))
			}
			b := subst(resp.Body)
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			w.WriteHeader(resp.Status)
			_, _ = io.WriteString(w, b)
		})}
		served.Add(1)
		go func() {
			defer served.Done()
			_ = p.srv.Serve(ln)
		}()
	}
	defer func() {
		for _, p := range parties {
			if p.srv != nil {
				_ = p.srv.Close()
			}
		}
		served.Wait()
	}()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	opts := monitor.Options{
		Group: "g", Address: "http://192.0.2.10:9001",
		Token: tc.Monitor.Token, JoinToken: tc.Monitor.JoinToken, Worker: tc.Monitor.Worker,
		RegisterAttempts: tc.Monitor.RegisterAttempts,
		HTTPClient:       &http.Client{Transport: tr, Timeout: 5 * time.Second},
		Logger:           discardLogger(),
	}
	if tc.Monitor.Token != "" {
		opts.FrontDoor = "http://192.0.2.1:8000"
	}
	for i, a := range tc.Monitor.Admins {
		p, ok := parties[a]
		if !ok {
			t.Fatalf("monitor.admins[%d]: no party %q", i, a)
		}
		if i == 0 {
			opts.Admin = p.url
		} else {
			opts.Admins = append(opts.Admins, p.url)
		}
	}
	m, err := monitor.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close(context.Background()) }()

	for i, s := range tc.Steps {
		where := fmt.Sprintf("step %d (%s %s)", i, s.Do, s.Doc)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		switch s.Do {
		case "start":
			if err := m.Start(); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			got := "registered"
			_, err := m.WaitRegistered(ctx)
			switch {
			case errors.Is(err, monitor.ErrGaveUp):
				got = "gave_up"
			case err != nil:
				t.Fatalf("%s: neither registered nor gave up: %v", where, err)
			}
			if got != s.Expect {
				t.Fatalf("%s: %s, want %s", where, got, s.Expect)
			}
		case "report":
			_, err := m.ReportNow(ctx)
			got := "ok"
			if err != nil {
				got = "error"
			}
			if got != s.Expect {
				t.Fatalf("%s: %s (%v), want %s", where, got, err, s.Expect)
			}
			var ae *monitor.APIError
			if s.Status != 0 && (!errors.As(err, &ae) || ae.Status != s.Status) {
				t.Fatalf("%s: error %v, want the admin's answer %d", where, err, s.Status)
			}
		case "close":
			if err := m.Close(ctx); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		default:
			t.Fatalf("%s: unknown step", where)
		}
		cancel()
		if a := s.Advisory; a != nil {
			adv := m.Advisory()
			if a.Advisory != nil && adv.Advisory != *a.Advisory ||
				a.Term != nil && strconv.FormatUint(adv.Term, 10) != *a.Term ||
				a.Epoch != nil && strconv.FormatUint(adv.Epoch, 10) != *a.Epoch {
				t.Fatalf("%s: advisory %+v, want %+v", where, adv, *a)
			}
		}
		if s.IntervalMS != nil {
			if got := float64(m.Interval()) / float64(time.Millisecond); got != *s.IntervalMS {
				t.Fatalf("%s: interval %vms, want %vms", where, got, *s.IntervalMS)
			}
		}
	}

	for name, spec := range tc.Parties {
		p := parties[name]
		p.mu.Lock()
		seen := append([]seenRequest(nil), p.seen...)
		p.mu.Unlock()
		for i, got := range seen {
			if i >= len(spec.Requests) {
				t.Errorf("party %s: unexpected request %d: %s %s", name, i, got.method, got.target)
				continue
			}
			want := spec.Requests[i]
			where := fmt.Sprintf("party %s: request %d", name, i)
			if got.method != want.Method || got.target != want.Target {
				t.Errorf("%s: %s %s, want %s %s", where, got.method, got.target, want.Method, want.Target)
			}
			for k, v := range want.Headers {
				if g := got.header.Values(k); len(g) != 1 || g[0] != subst(v) {
					t.Errorf("%s: header %s = %q, want %q", where, k, g, subst(v))
				}
			}
			for _, k := range want.Absent {
				if g := got.header.Values(k); len(g) > 0 {
					t.Errorf("%s: header %s = %q, want it absent", where, k, g)
				}
			}
			if want.JSON != nil {
				var body map[string]any
				if err := json.Unmarshal(got.body, &body); err != nil {
					t.Errorf("%s: body %q: %v", where, got.body, err)
				}
				for k, v := range want.JSON {
					if !reflect.DeepEqual(body[k], v) {
						t.Errorf("%s: body member %s = %v, want %v", where, k, body[k], v)
					}
				}
			}
			if sb := want.SameBodyAs; sb != nil {
				other := parties[sb.Party]
				if other == nil {
					t.Fatalf("%s: same_body_as: no party %q", where, sb.Party)
				}
				other.mu.Lock()
				var ob []byte
				ok := sb.Index < len(other.seen)
				if ok {
					ob = other.seen[sb.Index].body
				}
				other.mu.Unlock()
				if !ok || !bytes.Equal(got.body, ob) {
					t.Errorf("%s: body %q, want the body of %s's request %d (%q)", where, got.body, sb.Party, sb.Index, ob)
				}
			}
		}
		if len(seen) < len(spec.Requests) {
			t.Errorf("party %s: saw %d requests, want %d", name, len(seen), len(spec.Requests))
		}
	}
}
