package monitor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/vectortest"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestVectorsAdvisoryBehaviour runs the behaviour cases of
// protocol/testdata/advisories.json (shared with the Python monitor's
// tests; see protocol/testdata/README.md) against a real Monitor: each
// apply step is the answer a real local admin server gives to the
// monitor's next report (pushed with ReportNow), each call step a bound
// call through the monitor's middleware, which must run it or answer 307
// with Fulcrum-Rebind: 1.
func TestVectorsAdvisoryBehaviour(t *testing.T) {
	t.Parallel()
	ran := 0
	for _, raw := range vectortest.Cases(t, "advisories") {
		var tc struct {
			Name   string           `json:"name"`
			Worker *protocol.Worker `json:"worker"`
			Steps  []struct {
				Apply  json.RawMessage `json:"apply"`
				Call   *string         `json:"call"`
				Expect string          `json:"expect"`
				Close  *bool           `json:"close"`
				Doc    string          `json:"doc"`
			} `json:"steps"`
		}
		if err := json.Unmarshal(raw, &tc); err != nil {
			t.Fatal(err)
		}
		if len(tc.Steps) == 0 {
			continue // a decode case: the protocol package's
		}
		ran++
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			// The admin API: each report is answered with the advisory
			// of the current apply step.
			var next atomic.Pointer[json.RawMessage]
			admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				adv := next.Load()
				if r.URL.Path != "/v1/report" || adv == nil {
					http.Error(w, "unexpected", http.StatusTeapot)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(*adv)
			}))
			defer admin.Close()
			m, err := monitor.New(monitor.Options{
				Admin: admin.URL, Token: "vectors-token", Group: "g",
				Address: "http://127.0.0.1:1", FrontDoor: "http://127.0.0.1:2",
				Worker: tc.Worker, Logger: discardLogger(),
			})
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ran") }))
			for i, s := range tc.Steps {
				switch {
				case s.Apply != nil:
					adv := s.Apply
					next.Store(&adv)
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, err := m.ReportNow(ctx)
					cancel()
					if err != nil {
						t.Fatalf("step %d: report: %v", i, err)
					}
				case s.Call != nil:
					req := httptest.NewRequest(http.MethodGet, "/prime/7", nil)
					req.Header.Set(protocol.HeaderBinding, "g/r-1")
					req.Header.Set(protocol.HeaderClient, *s.Call)
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					got := "run"
					if rec.Code == http.StatusTemporaryRedirect && rec.Header().Get(protocol.HeaderRebind) == "1" {
						got = "rebind"
					} else if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), []byte("ran")) {
						t.Fatalf("step %d: call of %s answered %d %q", i, *s.Call, rec.Code, rec.Body.Bytes())
					}
					if got != s.Expect {
						t.Fatalf("step %d: call of %s: %s, want %s (%s)", i, *s.Call, got, s.Expect, s.Doc)
					}
					if closed := rec.Header().Get("Connection") == "close"; s.Close != nil && closed != *s.Close {
						t.Fatalf("step %d: call of %s: Connection: close %v, want %v (%s)", i, *s.Call, closed, *s.Close, s.Doc)
					}
				default:
					t.Fatalf("step %d: neither apply nor call", i)
				}
			}
		})
	}
	if ran == 0 {
		t.Fatal("no behaviour cases")
	}
}
