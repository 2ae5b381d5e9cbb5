package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestMissingJoinTokenExits: a backend or agent started without the join
// token its group requires exits 1 after a bounded number of refused
// registrations, with an error naming the refusal, instead of serving
// unregistered forever.
func TestMissingJoinTokenExits(t *testing.T) {
	t.Parallel()
	admin, b := ctlServer(t, "admin")
	if _, _, err := b.PutGroup(protocol.Group{Name: "g", FrontDoor: "127.0.0.1:0", JoinToken: "join"}); err != nil {
		t.Fatal(err)
	}
	replica := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) }))
	t.Cleanup(replica.Close)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"backend prime", []string{"backend", "prime", "--listen", "127.0.0.1:0", "--register", admin, "--group", "g"}},
		{"backend prime --giop", []string{"backend", "prime", "--giop", "--listen", "127.0.0.1:0", "--register", admin, "--group", "g"}},
		{"agent http", []string{"agent", "http", "--target", replica.URL, "--register", admin, "--group", "g", "--pid", strconv.Itoa(os.Getpid()), "--sample", "20ms"}},
		{"agent giop", []string{"agent", "giop", "--listen", "127.0.0.1:0", "--target", "corbaloc:iiop:1.2@127.0.0.1:1/Prime", "--type-id", "IDL:Prime:1.0", "--register", admin, "--group", "g"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The backoff before the fifth try is at most 100+200+400+800ms.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			root := NewRoot()
			var out, errOut bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errOut)
			root.SetArgs(tc.args)
			err := root.ExecuteContext(ctx)
			if ctx.Err() != nil {
				t.Fatalf("still running after 30s: %v", err)
			}
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 1 || !errors.Is(err, monitor.ErrGaveUp) || !strings.Contains(err.Error(), "401") {
				t.Fatalf("err = %v, want exit 1 giving up on a 401", err)
			}
		})
	}
}

// TestRetryForeverFlag: backend and agents take --retry-forever.
func TestRetryForeverFlag(t *testing.T) {
	t.Parallel()
	for _, sub := range [][]string{{"backend", "prime"}, {"agent", "http"}, {"agent", "giop"}} {
		out, errOut, code := runCtl(t, "", append(sub, "--help")...)
		if code != 0 || !strings.Contains(out, "--retry-forever") || !strings.Contains(out, "5 tries") {
			t.Errorf("%s --help (exit %d) lacks --retry-forever: %s%s", strings.Join(sub, " "), code, out, errOut)
		}
	}
}
