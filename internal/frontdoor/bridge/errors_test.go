package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	snap := &frontdoor.Snapshot{Group: "g", Members: map[string]*frontdoor.Member{"r1": {State: protocol.StateDown}}}
	tests := []struct {
		name   string
		err    error
		status int
		code   string
		// says is a substring of the message or the reason.
		says string
	}{
		{"no replicas", fmt.Errorf("ordering: %w", replhub.ErrNoReplicas), 503, CodeNoReplica, "0 of 1 replicas active"},
		{"payload too large (log)", &replog.PayloadTooLargeError{Size: 2000, Max: 1024}, 413, protocol.CodePayloadTooLarge, "2000 bytes: max_payload is 1024"},
		{"payload too large (wrapped)", fmt.Errorf("hub: %w", &replog.PayloadTooLargeError{Size: 2000, Max: 1024}), 413, protocol.CodePayloadTooLarge, "max_payload is 1024"},
		{"body too large", &BodyTooLargeError{Size: 5000, Max: 1024}, 413, protocol.CodePayloadTooLarge, "5000 bytes: max_payload is 1024"},
		{"log full", &replog.LogFullError{Size: 10, Bytes: 100, Max: 105}, 507, protocol.CodeLogFull, "max_log_bytes 105"},
		{"reply expired", &replhub.ReplyExpiredError{Group: "g", Position: 17}, 409, protocol.CodeReplyExpired, "position 17"},
		{"bad session", fmt.Errorf("%w: session: empty", replog.ErrBadSession), 400, CodeBadRequest, "bad session"},
		{"bad header", &HeaderError{Header: protocol.HeaderSequence, Value: "x", Reason: "must be a decimal integer"}, 400, CodeBadRequest, "header Fulcrum-Sequence"},
		{"deadline", fmt.Errorf("waiting: %w", context.DeadlineExceeded), 504, CodeGatewayTimeout, "request timeout"},
		{"call timeout", frontdoor.ErrCallTimeout, 504, CodeGatewayTimeout, "request timeout"},
		{"not caught up", &NotCaughtUpError{Position: 9, Live: 2}, 503, CodeNoReplica, "applied position 9"},
		{"no replica (read-only)", frontdoor.ErrNoReplica, 503, CodeNoReplica, "0 of 1 replicas active"},
		{"overloaded", frontdoor.ErrOverloaded, 503, CodeOverloaded, "in flight"},
		{"proxy", &proxyError{err: errors.New("connection refused")}, 502, CodeBadGateway, "connection refused"},
		{"log failure", errors.New("etcd: leader lost"), 503, CodeLogUnavailable, "leader lost"},
		{"log closed", replog.ErrClosed, 503, CodeLogUnavailable, "closed"},
		{"connect", errMethod, 405, CodeMethod, "CONNECT"},
		{"bad target", errBadTarget, 400, CodeBadRequest, "must be a path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, d := describe(snap, tt.err)
			if status != tt.status || d.Code != tt.code {
				t.Fatalf("describe(%v) = %d %s; want %d %s", tt.err, status, d.Code, tt.status, tt.code)
			}
			if !strings.Contains(d.Message+" "+d.Reason, tt.says) {
				t.Fatalf("describe(%v): message %q, reason %q; want one saying %q", tt.err, d.Message, d.Reason, tt.says)
			}
			if status != http.StatusBadRequest && d.Message == "" {
				t.Fatal("empty message")
			}
		})
	}
}

func TestOrderedHeader(t *testing.T) {
	t.Parallel()
	in := http.Header{
		"Content-Type":                  {"application/json"},
		"Accept":                        {"a", "b"},
		"Connection":                    {"keep-alive, X-Hop"},
		"X-Hop":                         {"1"},
		"Keep-Alive":                    {"timeout=5"},
		"Te":                            {"trailers"},
		"Upgrade":                       {"websocket"},
		"Transfer-Encoding":             {"chunked"},
		"Content-Length":                {"12"},
		protocol.HeaderSession:          {"s"},
		protocol.HeaderSequence:         {"1"},
		protocol.HeaderTime:             {"2020-01-01T00:00:00Z"},
		protocol.HeaderSeed:             {"5"},
		protocol.HeaderIdempotencyKey:   {"k"},
		http.CanonicalHeaderKey("x-id"): {"7"},
	}
	got := orderedHeader(in)
	want := http.Header{"Content-Type": {"application/json"}, "Accept": {"a", "b"}, protocol.HeaderIdempotencyKey: {"k"}, "X-Id": {"7"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("orderedHeader = %v\nwant %v", got, want)
	}
	got["Accept"][0] = "changed"
	if in["Accept"][0] != "a" {
		t.Fatal("orderedHeader shares its values with the request's header")
	}
	if h := orderedHeader(http.Header{"Connection": {"close"}}); h != nil {
		t.Fatalf("orderedHeader of hop-by-hop fields only = %v, want nil", h)
	}
}
