package balancer_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A front door whose listener stops for good (not by Shutdown) makes the
// balancer not ready, and /readyz answer 503.
func TestStoppedListenerIsNotReady(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{protocol.ProtocolHTTP, protocol.ProtocolGIOP} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{admin: true})
			e.mustPutGroup(protocol.Group{Name: "a", Protocol: proto, FrontDoor: "127.0.0.1:0"})
			e.mustPutGroup(protocol.Group{Name: "b", Protocol: proto, FrontDoor: "127.0.0.1:0"})
			if code := readyz(t, e.adminURL); !e.b.Ready() || code != http.StatusOK {
				t.Fatalf("Ready() = %v, /readyz %d with every front door serving", e.b.Ready(), code)
			}
			exited := e.b.BreakFrontDoor("a")
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Fatal("the front door kept serving a closed listener")
			}
			if e.b.Ready() {
				t.Error("Ready() = true with a front door whose listener stopped")
			}
			if code := readyz(t, e.adminURL); code != http.StatusServiceUnavailable {
				t.Errorf("/readyz = %d with a stopped listener, want 503", code)
			}
		})
	}
}

func readyz(t *testing.T, admin string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
