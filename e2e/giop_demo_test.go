//go:build linux

package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fulcrum demo --protocol giop: the TAO paper's effectiveness experiment over
// GIOP (Go Prime servants, client ORBs following LOCATION_FORWARD) reaches
// equilibrium and exits 0; a replica killed with kill -9 has its clients
// go back through the front door with no failed call beyond those in
// flight, and is started again and takes load.
func TestDemoGIOP(t *testing.T) {
	t.Parallel()
	t.Run("on-demand least-loaded", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t, 100*time.Second)
		code, stdout, stderr := run(ctx, t, "fulcrum demo --protocol giop", "demo", "--protocol", "giop", "--duration", "60s")
		if code != 0 || !strings.Contains(stdout, "balanced after") {
			t.Fatalf("fulcrum demo --protocol giop: exit status %d, want 0 and \"balanced after\"\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "corbaloc:iiop:") || !regexp.MustCompile(`(?m)^replica 1: pid \d+, IOR:[0-9a-f]+$`).MatchString(stdout) {
			t.Errorf("the demo does not show the group's corbaloc reference and the replicas' IORs:\n%s", stdout)
		}
		checkDemoCalls(t, stdout, 0)
	})
	t.Run("kill -9 of a replica", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t, 100*time.Second)
		const clients = 8
		out, _ := runDemoKillingReplica(ctx, t, "fulcrum demo --protocol giop", "demo", "--protocol", "giop", "--duration", "60s")
		checkDemoCalls(t, out, clients)
	})
}

// checkDemoCalls checks the demo's rows: calls were served every second
// after the clients started, and at most maxFailed failed in all.
func checkDemoCalls(t *testing.T, out string, maxFailed int) {
	t.Helper()
	rows := demoRow.FindAllStringSubmatch(out, -1)
	if len(rows) < 5 {
		t.Fatalf("only %d rows of rates:\n%s", len(rows), out)
	}
	failed := 0
	for _, row := range rows {
		n, _ := strconv.Atoi(row[3])
		failed += n
		served := 0
		for _, f := range strings.Fields(row[2]) {
			v, _ := strconv.Atoi(f)
			served += v
		}
		if sec, _ := strconv.Atoi(row[1]); sec >= 3 && served == 0 {
			t.Errorf("second %d: no calls served:\n%s", sec, out)
		}
	}
	if failed > maxFailed {
		t.Errorf("%d failed calls, want at most %d:\n%s", failed, maxFailed, out)
	}
}
