//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// fulcrum bench overhead --tls --smoke runs the lean and stdlib engines
// behind TLS beside HAProxy with TLS, and records full handshakes per
// second and HAProxy's nbthread and OpenSSL.
func TestBenchOverheadTLSSmoke(t *testing.T) {
	t.Parallel()
	raw, out := benchSmoke(t, "fulcrum bench overhead --tls", "overhead", []string{"--tls"})
	var res struct {
		benchResults
		TLS struct {
			HAProxy *struct {
				NBThread int      `json:"nbthread"`
				OpenSSL  []string `json:"openssl"`
			} `json:"haproxy"`
			Handshakes     map[string]float64 `json:"handshakes_per_s"`
			HandshakeCount int                `json:"handshake_count"`
		} `json:"tls"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if !strings.Contains(res.Command, "--tls") {
		t.Errorf("command %q, want --tls", res.Command)
	}
	var names []string
	for _, row := range res.Rows {
		names = append(names, row["name"].(string))
		checkServed(t, row, 200)
		if _, skipped := row["skipped"]; !skipped && row["name"] != "direct" {
			if v, ok := row["proxy_cpu_us_per_call"].(float64); !ok || !(v > 0) {
				t.Errorf("row %v: proxy_cpu_us_per_call = %v, want CPU per call", row["name"], row["proxy_cpu_us_per_call"])
			}
		}
	}
	if want := []string{"direct", "per-request-tls-lean", "per-request-tls-stdlib", "haproxy-tls"}; !slices.Equal(names, want) {
		t.Errorf("rows %v, want %v", names, want)
	}
	wantHS := []string{"per-request-tls-lean", "per-request-tls-stdlib"}
	if res.TLS.HAProxy != nil {
		wantHS = append(wantHS, "haproxy-tls")
		if res.TLS.HAProxy.NBThread < 1 || len(res.TLS.HAProxy.OpenSSL) == 0 || !strings.Contains(res.TLS.HAProxy.OpenSSL[0], "OpenSSL") {
			t.Errorf("haproxy %+v, want nbthread and its OpenSSL line", *res.TLS.HAProxy)
		}
	} else if os.Getenv("CI") == "true" {
		t.Error("HAProxy did not run under CI=true")
	}
	for _, name := range wantHS {
		if v := res.TLS.Handshakes[name]; !(v > 0) {
			t.Errorf("handshakes/s of %s = %v, want a rate", name, v)
		}
	}
	if res.TLS.HandshakeCount != 50 {
		t.Errorf("handshake_count %d, want 50 under --smoke", res.TLS.HandshakeCount)
	}
	report, err := os.ReadFile(out + "/report.md")
	if err != nil || !strings.Contains(string(report), "Full handshakes") {
		t.Errorf("report.md: %v, want a handshake section", err)
	}
}
