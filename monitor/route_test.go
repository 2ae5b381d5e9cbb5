package monitor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
)

func TestAdminRouteOrder(t *testing.T) {
	t.Parallel()
	list := []string{"http://a", "http://b", "http://c"}
	tests := []struct {
		name    string
		list    []string
		current string
		want    []string
	}{
		{name: "one URL", list: []string{"http://a"}, current: "http://a", want: []string{"http://a"}},
		{name: "from the first", list: list, current: "http://a", want: []string{"http://a", "http://b", "http://c"}},
		{name: "from the middle, wrapping", list: list, current: "http://b", want: []string{"http://b", "http://c", "http://a"}},
		{name: "from the last", list: list, current: "http://c", want: []string{"http://c", "http://a", "http://b"}},
		{name: "a redirect target, then the list", list: list, current: "http://leader", want: []string{"http://leader", "http://a", "http://b", "http://c"}},
		{name: "nothing current", list: list, current: "", want: list},
		{name: "no list", list: nil, current: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := adminRoute{list: tt.list, current: tt.current}
			if got := r.order(); !slices.Equal(got, tt.want) {
				t.Fatalf("order() = %v, want %v", got, tt.want)
			}
		})
	}
	if r := newAdminRoute(list); r.current != "http://a" {
		t.Errorf("newAdminRoute starts at %q, want the first URL", r.current)
	}
}

func TestRedirectBase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, base, location, want string
		wantErr                    bool
	}{
		{name: "absolute, another host", base: "http://127.0.0.1:7070", location: "http://127.0.0.2:7070/v1/report", want: "http://127.0.0.2:7070"},
		{name: "absolute with a base path", base: "http://a:1", location: "https://b:2/fulcrum/v1/report", want: "https://b:2/fulcrum"},
		{name: "relative to the request", base: "http://a:1/admin", location: "/other/v1/report", want: "http://a:1/other"},
		{name: "no Location", base: "http://a:1", location: "", wantErr: true},
		{name: "not /v1/report", base: "http://a:1", location: "http://b:2/v1/groups", wantErr: true},
		{name: "not http", base: "http://a:1", location: "ftp://b:2/v1/report", wantErr: true},
		{name: "with a query", base: "http://a:1", location: "http://b:2/v1/report?x=1", wantErr: true},
		{name: "unparsable", base: "http://a:1", location: "http://b:2:3:4/v1/report\x7f", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := redirectBase(tt.base, tt.location)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("redirectBase(%q, %q) = %q, %v; want %q, error %v", tt.base, tt.location, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestTryElsewhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "no error", err: nil, want: false},
		{name: "transport error", err: fmt.Errorf("monitor: report: %w", errors.New("dial tcp 127.0.0.1:1: connect: connection refused")), want: true},
		{name: "timeout", err: fmt.Errorf("monitor: report: %w", context.DeadlineExceeded), want: true},
		{name: "503", err: fmt.Errorf("monitor: report: %w", &APIError{Status: http.StatusServiceUnavailable}), want: true},
		{name: "500", err: &APIError{Status: http.StatusInternalServerError}, want: true},
		{name: "401 is the balancer's answer", err: fmt.Errorf("x: %w", &APIError{Status: http.StatusUnauthorized}), want: false},
		{name: "400", err: &APIError{Status: http.StatusBadRequest}, want: false},
		{name: "403 refusal", err: &APIError{Status: http.StatusForbidden, registering: true}, want: false},
		{name: "undecodable answer", err: &decodeError{errors.New("bad json")}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tryElsewhere(tt.err); got != tt.want {
				t.Fatalf("tryElsewhere(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
