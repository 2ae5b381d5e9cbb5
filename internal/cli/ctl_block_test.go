package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// runBackend starts "fulcrum backend prime" registering at admin in group
// until ctx ends, and returns its exit error on the channel.
func runBackend(ctx context.Context, args ...string) <-chan error {
	root := NewRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"backend", "prime", "--listen", "127.0.0.1:0"}, args...))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	return done
}

// waitReplica polls group's status until a replica other than not is
// active, and returns it.
func waitReplica(ctx context.Context, t *testing.T, b *balancer.Balancer, group, not string) protocol.ReplicaStatus {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := b.Group(group)
		if err == nil {
			for _, r := range st.Replicas {
				if r.ID != not && r.State == protocol.StateActive {
					return r
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no replica other than %q became active in %s: %+v", not, group, st.Replicas)
		case <-tick.C:
		}
	}
}

// TestCtlRemoveBlock: "ctl remove" of a replica whose monitor runs is
// undone by the monitor, which registers the address again under a new id;
// "ctl remove --block" sticks: the monitor's registration is refused, the
// backend gives up and exits 1, and after "ctl unblock" the address
// registers again.
func TestCtlRemoveBlock(t *testing.T) {
	t.Parallel()
	admin, b := ctlServer(t, "")
	mustCtl(t, admin, "create", "g", "--front-door", "127.0.0.1:0", "--report-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	bctx, stopBackend := context.WithCancel(ctx)
	defer stopBackend()
	done := runBackend(bctx, "--register", admin, "--group", "g")
	first := waitReplica(ctx, t, b, "g", "")

	// Without --block the live monitor brings the replica back.
	if out := mustCtl(t, admin, "remove", "g", first.ID); !strings.Contains(out, "draining") {
		t.Errorf("remove: %q", out)
	}
	second := waitReplica(ctx, t, b, "g", first.ID)
	if second.Address != first.Address {
		t.Fatalf("came back at %s, want %s", second.Address, first.Address)
	}

	// With --block it stays out, and the backend exits 1.
	out := mustCtl(t, admin, "remove", "g", second.ID, "--block")
	if !strings.Contains(out, "blocked") || !strings.Contains(out, "fulcrum ctl unblock g "+second.Address) {
		t.Errorf("remove --block: %q", out)
	}
	if show := mustCtl(t, admin, "show", "g"); !strings.Contains(show, "blocked      "+second.Address) {
		t.Errorf("show does not list the block:\n%s", show)
	}
	select {
	case err := <-done:
		var ae *monitor.APIError
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 1 || !errors.Is(err, monitor.ErrGaveUp) || !errors.As(err, &ae) || ae.Status != http.StatusForbidden || !strings.Contains(err.Error(), "unblock") {
			t.Fatalf("backend exited with %v, want exit 1 giving up on a 403 that says how to unblock", err)
		}
	case <-ctx.Done():
		t.Fatal("the blocked backend is still running")
	}
	if st, _ := b.Group("g"); len(st.Replicas) > 1 || (len(st.Replicas) == 1 && st.Replicas[0].ID != second.ID) {
		t.Errorf("replicas after the block: %+v", st.Replicas)
	}

	// Unblocked, the address registers again.
	if out := mustCtl(t, admin, "unblock", "g", second.Address); !strings.Contains(out, "unblocked") {
		t.Errorf("unblock: %q", out)
	}
	_, errOut, code := runCtl(t, "", "ctl", "--admin", admin, "unblock", "g", second.Address)
	if code != 1 || !strings.Contains(errOut, "unknown_block") {
		t.Errorf("unblock twice: exit %d: %s", code, errOut)
	}
	mustCtl(t, admin, "add", "g", second.Address, "--replace")
}

// TestCtlRemoveHelpSaysItComesBack: the help of "ctl remove" says a live
// monitor registers the replica again, and offers --block and unblock.
func TestCtlRemoveHelpSaysItComesBack(t *testing.T) {
	t.Parallel()
	out, _, code := runCtl(t, "", "ctl", "remove", "--help")
	for _, want := range []string{"registers again", "--block", "fulcrum ctl unblock GROUP ADDRESS"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("remove --help lacks %q:\n%s", want, out)
		}
	}
}
