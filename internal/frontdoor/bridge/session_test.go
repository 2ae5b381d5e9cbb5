package bridge

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestIdentify(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("s", protocol.MaxSessionLength)
	tests := []struct {
		name    string
		header  map[string][]string
		ordered bool
		want    identity
		// wantErr, when not "", is a substring every refusal must have;
		// wantHeader is the header it must name.
		wantErr, wantHeader string
	}{
		{name: "session and sequence", header: map[string][]string{protocol.HeaderSession: {"c1"}, protocol.HeaderSequence: {"42"}}, ordered: true,
			want: identity{Session: "c1", Seq: 42}},
		{name: "session of the longest length", header: map[string][]string{protocol.HeaderSession: {long}, protocol.HeaderSequence: {"18446744073709551615"}}, ordered: true,
			want: identity{Session: long, Seq: 1<<64 - 1}},
		{name: "session of 128 multi-byte characters", header: map[string][]string{protocol.HeaderSession: {strings.Repeat("é", 128)}, protocol.HeaderSequence: {"0"}}, ordered: true,
			want: identity{Session: strings.Repeat("é", 128)}},
		{name: "session wins over the idempotency key", header: map[string][]string{protocol.HeaderSession: {"c1"}, protocol.HeaderSequence: {"7"}, protocol.HeaderIdempotencyKey: {"k"}}, ordered: true,
			want: identity{Session: "c1", Seq: 7}},
		{name: "idempotency key alone", header: map[string][]string{protocol.HeaderIdempotencyKey: {"8e03978e"}}, ordered: true,
			want: identity{Session: "idem:8e03978e"}},
		{name: "read-only call without sequence", header: map[string][]string{protocol.HeaderSession: {"c1"}}, ordered: false,
			want: identity{Session: "c1"}},
		{name: "no headers, no connection", header: nil, ordered: true, want: identity{}},

		{name: "session too long", header: map[string][]string{protocol.HeaderSession: {long + "x"}, protocol.HeaderSequence: {"1"}}, ordered: true,
			wantErr: "129 characters: at most 128 allowed", wantHeader: protocol.HeaderSession},
		{name: "sequence missing", header: map[string][]string{protocol.HeaderSession: {"c1"}}, ordered: true,
			wantErr: "missing: required with Fulcrum-Session", wantHeader: protocol.HeaderSequence},
		{name: "sequence not a number", header: map[string][]string{protocol.HeaderSession: {"c1"}, protocol.HeaderSequence: {"-1"}}, ordered: true,
			wantErr: "must be a decimal integer in [0, 2^64)", wantHeader: protocol.HeaderSequence},
		{name: "sequence above uint64", header: map[string][]string{protocol.HeaderSession: {"c1"}, protocol.HeaderSequence: {"18446744073709551616"}}, ordered: true,
			wantErr: "must be a decimal integer in [0, 2^64)", wantHeader: protocol.HeaderSequence},
		{name: "bad sequence on a read-only call", header: map[string][]string{protocol.HeaderSession: {"c1"}, protocol.HeaderSequence: {"x"}}, ordered: false,
			wantErr: "must be a decimal integer", wantHeader: protocol.HeaderSequence},
		{name: "sequence without session", header: map[string][]string{protocol.HeaderSequence: {"1"}}, ordered: true,
			wantErr: "sent without Fulcrum-Session", wantHeader: protocol.HeaderSequence},
		{name: "session sent twice", header: map[string][]string{protocol.HeaderSession: {"a", "b"}, protocol.HeaderSequence: {"1"}}, ordered: true,
			wantErr: "sent 2 times: must be sent once", wantHeader: protocol.HeaderSession},
		{name: "empty session", header: map[string][]string{protocol.HeaderSession: {" "}, protocol.HeaderSequence: {"1"}}, ordered: true,
			wantErr: "empty", wantHeader: protocol.HeaderSession},
		{name: "reserved idempotency prefix", header: map[string][]string{protocol.HeaderSession: {"idem:k"}, protocol.HeaderSequence: {"0"}}, ordered: true,
			wantErr: `starts with "idem:"`, wantHeader: protocol.HeaderSession},
		{name: "reserved connection prefix", header: map[string][]string{protocol.HeaderSession: {"conn:abc"}, protocol.HeaderSequence: {"1"}}, ordered: true,
			wantErr: `starts with "conn:"`, wantHeader: protocol.HeaderSession},
		{name: "session not UTF-8", header: map[string][]string{protocol.HeaderSession: {"a\xffb"}, protocol.HeaderSequence: {"1"}}, ordered: true,
			wantErr: "not valid UTF-8", wantHeader: protocol.HeaderSession},
		{name: "idempotency key too long", header: map[string][]string{protocol.HeaderIdempotencyKey: {strings.Repeat("k", MaxIdempotencyKeyLength+1)}}, ordered: true,
			wantErr: "124 characters: must be 1 to 123 characters", wantHeader: protocol.HeaderIdempotencyKey},
		{name: "idempotency key not UTF-8", header: map[string][]string{protocol.HeaderIdempotencyKey: {"k\xff"}}, ordered: true,
			wantErr: "not valid UTF-8", wantHeader: protocol.HeaderIdempotencyKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := identify(http.Header(tt.header), nil, tt.ordered)
			if tt.wantErr != "" {
				var he *HeaderError
				if !errors.As(err, &he) {
					t.Fatalf("identify = %+v, %v; want a *HeaderError", got, err)
				}
				if he.Header != tt.wantHeader || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.wantHeader) {
					t.Fatalf("error %q (header %s); want one naming %s and saying %q", err, he.Header, tt.wantHeader, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("identify = %+v, %v; want %+v", got, err, tt.want)
			}
			if got.Session != "" {
				// What the bridge accepts, the log accepts.
				if err := replog.CheckSession(got.Session); err != nil {
					t.Fatalf("the log refuses session %q: %v", got.Session, err)
				}
			}
		})
	}
}

func TestIdentifyConnection(t *testing.T) {
	t.Parallel()
	a, b := newConnSession(), newConnSession()
	if a.id == b.id || !strings.HasPrefix(a.id, ConnectionSessionPrefix) {
		t.Fatalf("connection sessions %q and %q: want distinct ids with prefix %q", a.id, b.id, ConnectionSessionPrefix)
	}
	if err := replog.CheckSession(a.id); err != nil {
		t.Fatalf("the log refuses connection session %q: %v", a.id, err)
	}
	for want := uint64(1); want <= 3; want++ {
		got, err := identify(http.Header{}, a, true)
		if err != nil || got != (identity{Session: a.id, Seq: want}) {
			t.Fatalf("ordered call %d: identify = %+v, %v; want session %s seq %d", want, got, err, a.id, want)
		}
	}
	// A read-only call takes no sequence number.
	if got, _ := identify(http.Header{}, a, false); got != (identity{Session: a.id}) {
		t.Fatalf("read-only call: identify = %+v; want the session without a sequence", got)
	}
	if got, _ := identify(http.Header{}, a, true); got.Seq != 4 {
		t.Fatalf("after a read-only call: seq %d, want 4", got.Seq)
	}
	// Headers win over the connection.
	got, _ := identify(http.Header{protocol.HeaderIdempotencyKey: {"k"}}, b, true)
	if got != (identity{Session: IdempotencySessionPrefix + "k"}) {
		t.Fatalf("identify with an idempotency key on a connection = %+v", got)
	}
	if got, _ := identify(http.Header{}, b, true); got.Seq != 1 {
		t.Fatalf("connection b's first ordered call: seq %d, want 1 (a keyed call takes none)", got.Seq)
	}
}
