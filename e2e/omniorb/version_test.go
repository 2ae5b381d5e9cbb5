//go:build linux

package omniorb

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// omniORB's trace at level 40 dumps each message; its first bytes are
// "GIOP" and the version.
var giopHeader = regexp.MustCompile(`(?m)^4749 4f50 (\d\d)(\d\d) `)

// Every GIOP version the client speaks is answered in that version: omniORB
// clients limited to GIOP 1.0, 1.1 and 1.2 (-ORBmaxGIOPVersion) call
// through the front door on-demand (_is_a forwarded) and per-request
// (proxied); every message in their traces, theirs and the answers, is in
// their version.
func TestGIOPVersions(t *testing.T) {
	o := needORBs(t)
	ctx := testContext(t, time.Minute)
	kinds := []clientKind{cxxClient}
	if o.python != "" {
		kinds = append(kinds, pyClient)
	}
	for _, binding := range []string{"on-demand", "per-request"} {
		r := o.startRig(ctx, t, rigOpts{binding: binding, report: "1h"})
		// The group's references are IIOP 1.0 (its corbaloc URL names no
		// version, and its IOR has an IIOP 1.0 profile), so a client
		// speaks GIOP 1.0 to the front door whatever it could do; naming
		// 1.2 in the URL lets the client's maximum decide.
		ref := strings.Replace(r.corbaloc, "corbaloc:iiop:", "corbaloc:iiop:1.2@", 1)
		for _, v := range []string{"1.0", "1.1", "1.2"} {
			want := "0" + v[:1] + "0" + v[2:] // as the dump shows it: 0102
			for _, k := range kinds {
				what := fmt.Sprintf("%s, GIOP %s, %s client", binding, v, k)
				p := o.startClient(t, k, "-ORBmaxGIOPVersion", v, "-ORBtraceLevel", "40", "--calls", "3", ref)
				code, _, sum := clientResult(ctx, t, k, p, nil)
				if code != 0 || sum.OK != 3 {
					t.Errorf("%s: exit %d, %+v; want 3 calls ok", what, code, sum)
					continue
				}
				n := 0
				for _, m := range giopHeader.FindAllStringSubmatch(p.Stderr.String(), -1) {
					n++
					if got := m[1] + m[2]; got != want {
						t.Errorf("%s: a message of GIOP %s.%s in the trace, want %s", what, m[1], m[2], v)
						break
					}
				}
				if n < 6 {
					t.Errorf("%s: %d GIOP messages in the trace, want at least 6 (3 calls and their replies)", what, n)
				}
			}
		}
	}
}
