package ctl

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestPrintSessions: one line per entry with its idle time and time left
// as of now (0 when past), then the count and the next page's token.
func TestPrintSessions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	l := protocol.SessionList{Total: 5, Next: "1/obj b", Sessions: []protocol.SessionEntry{
		{Rule: 0, Key: "10.0.0.7", Replica: "r-0a", Created: now.Add(-time.Hour), LastUsed: now.Add(-90 * time.Second), Expires: now.Add(210 * time.Second)},
		{Rule: 1, Key: "obj b", Replica: "r-0b", Created: now.Add(-time.Minute), LastUsed: now.Add(-time.Minute), Expires: now.Add(-time.Second)},
	}}
	var buf bytes.Buffer
	if err := PrintSessions(&buf, l, now); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^RULE\s+KEY\s+REPLICA\s+CREATED\s+IDLE\s+EXPIRES IN$`,
		`(?m)^0\s+10\.0\.0\.7\s+r-0a\s+2026-11-27T09:00:00Z\s+1m30s\s+3m30s$`,
		`(?m)^1\s+obj b\s+r-0b\s+2026-11-27T09:59:00Z\s+1m0s\s+0s$`,
		`(?m)^2 of 5 entries; next page: --after "1/obj b"$`,
	} {
		if !regexp.MustCompile(re).MatchString(buf.String()) {
			t.Errorf("output does not match %s:\n%s", re, buf.String())
		}
	}
}
