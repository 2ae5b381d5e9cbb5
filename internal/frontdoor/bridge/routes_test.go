package bridge

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestReadOnlyRoutes(t *testing.T) {
	t.Parallel()
	s := &Server{log: quietLogger()}
	snap := &frontdoor.Snapshot{Replicated: protocol.Replicated{ReadOnly: []string{
		"GET /value", "GET /balance/{rest...}", "example.com/host-only",
		// Left out, logged, never a panic: a duplicate and a bad pattern.
		"GET /value", "GET /{bad",
	}}}
	tests := []struct {
		method, target, host string
		want                 bool
	}{
		{"GET", "/value", "", true},
		{"HEAD", "/value", "", true},
		{"POST", "/value", "", false},
		{"GET", "/value?x=1", "", true},
		{"GET", "/value/", "", false},
		{"GET", "/balance/a/b", "", true},
		{"GET", "/balance", "", false},
		{"POST", "/host-only", "example.com", true},
		{"POST", "/host-only", "other.example", false},
		{"GET", "/increment", "", false},
		{"GET", "//value", "", false}, // ServeMux would redirect it
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.target, nil)
		if tt.host != "" {
			r.Host = tt.host
		}
		if got := s.readOnly(snap, r); got != tt.want {
			t.Errorf("%s %s (host %q): read-only %v, want %v", tt.method, tt.target, tt.host, got, tt.want)
		}
	}
	// New patterns are compiled when the snapshot's change.
	snap2 := &frontdoor.Snapshot{Replicated: protocol.Replicated{ReadOnly: []string{"GET /other"}}}
	if s.readOnly(snap2, httptest.NewRequest(http.MethodGet, "/value", nil)) || !s.readOnly(snap2, httptest.NewRequest(http.MethodGet, "/other", nil)) {
		t.Fatal("the routes did not follow the snapshot's new patterns")
	}
	if s.readOnly(&frontdoor.Snapshot{}, httptest.NewRequest(http.MethodGet, "/other", nil)) {
		t.Fatal("a group without read_only patterns has a read-only route")
	}
}
