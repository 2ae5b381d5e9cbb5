//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// engineConfig is a per-request group under http_engine %s.
const engineConfig = `
admin: 127.0.0.1:0
data_dir: %s
http_engine: %s
groups:
  - name: proxied
    front_door: 127.0.0.1:0
    binding: per-request
    replicas:
      - address: %s
`

// http_engine chooses what serves the HTTP front doors: both engines
// proxy a call alike; a malformed request tells them apart (the lean
// engine answers the front door's JSON error, net/http its own plain
// text).
func TestHTTPEngineSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		engine, badType string
	}{
		{"lean", "application/json"},
		{"stdlib", "text/plain; charset=utf-8"},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 60*time.Second)
			hc := apiClient(t)
			_, replica := startPrime(t, "--listen", "127.0.0.1:0")
			bal := startServe(t, "--config", writeConfig(t, engineConfig, filepath.Join(t.TempDir(), "data"), tc.engine, replica))
			g, err := getGroup(ctx, hc, bal.admin, "proxied")
			if err != nil {
				t.Fatal(err)
			}
			res, err := hc.Get("http://" + g.Listening + "/prime/7")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("proxied call: %d %s", res.StatusCode, body)
			}

			conn, err := net.Dial("tcp", g.Listening)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := fmt.Fprint(conn, "GET /prime/%zz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			bad, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			bad.Body.Close()
			if ct := bad.Header.Get("Content-Type"); bad.StatusCode != http.StatusBadRequest || !strings.EqualFold(ct, tc.badType) {
				t.Errorf("malformed request: %d %q, want 400 %q", bad.StatusCode, ct, tc.badType)
			}
		})
	}
}
