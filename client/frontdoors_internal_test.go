package client

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestOwnUnavailable(t *testing.T) {
	t.Parallel()
	const own = `{"error":{"code":"no_replica","message":"no replica can serve this request","group":"g","reason":"0 of 2 replicas active"}}` + "\n"
	tests := []struct {
		name   string
		status int
		group  string
		body   string
		want   bool
	}{
		{name: "front door: no replica", status: 503, group: "g", body: own, want: true},
		{name: "front door: overloaded", status: 503, group: "g", body: `{"error":{"code":"overloaded","group":"g"}}`, want: true},
		{name: "front door: group starting", status: 503, group: "", body: `{"error":{"code":"no_replica","message":"no replica can serve this request","group":"","reason":"the group is starting"}}`, want: true},
		{name: "replica's 503, plain text", status: 503, group: "", body: "busy", want: false},
		{name: "replica's 503, its own JSON", status: 503, group: "", body: `{"error":{"code":"unavailable"}}`, want: false},
		{name: "replica's 503 naming another group", status: 503, group: "g", body: `{"error":{"code":"no_replica","group":"other"}}`, want: false},
		{name: "a fulcrum code without the group header", status: 503, group: "", body: `{"error":{"code":"no_replica","group":"g"}}`, want: false},
		{name: "empty body", status: 503, group: "g", body: "", want: false},
		{name: "not a 503", status: 502, group: "g", body: `{"error":{"code":"bad_gateway","group":"g"}}`, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := &http.Response{StatusCode: tt.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tt.body))}
			if tt.group != "" {
				resp.Header.Set(protocol.HeaderGroup, tt.group)
			}
			if got := ownUnavailable(resp); got != tt.want {
				t.Fatalf("ownUnavailable = %v, want %v", got, tt.want)
			}
			rest, _ := io.ReadAll(resp.Body)
			if string(rest) != tt.body {
				t.Fatalf("body after the peek %q, want it whole: %q", rest, tt.body)
			}
		})
	}
}

func TestNewDoorSets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		urls    []string
		wantErr string
		keys    int
	}{
		{name: "none", urls: nil},
		{name: "two", urls: []string{"http://10.0.0.1:8000", "http://10.0.0.2:8000/"}, keys: 2},
		{name: "duplicate dropped", urls: []string{"http://a:1", "http://a:1", "https://a:1"}, keys: 2},
		{name: "no scheme", urls: []string{"http://a:1", "b:2"}, wantErr: `Options.FrontDoors[1] "b:2"`},
		{name: "a path", urls: []string{"http://a:1/prime"}, wantErr: `Options.FrontDoors[0] "http://a:1/prime": must be a front door's base URL`},
		{name: "a query", urls: []string{"http://a:1?x"}, wantErr: "Options.FrontDoors[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := newDoorSets(tt.urls)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("newDoorSets(%q) error %v, want one containing %q", tt.urls, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(m) != tt.keys {
				t.Fatalf("%d front doors, want %d", len(m), tt.keys)
			}
			for _, s := range m {
				if len(s.keys) != tt.keys {
					t.Fatalf("set of %d, want %d", len(s.keys), tt.keys)
				}
			}
		})
	}
}
