package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// needStrategies fails a test whose strategies are not registered.
func needStrategies(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, ok := strategy.Lookup(n); !ok {
			t.Fatalf("strategy %q is not registered", n)
		}
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "# only a comment\n", "---\n", "~\n", "\n\n"} {
		f, err := Parse("fulcrum.yaml", []byte(in))
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if !reflect.DeepEqual(f, Default()) {
			t.Fatalf("Parse(%q) = %+v, want the defaults %+v", in, f, Default())
		}
	}
	d := Default()
	if d.Admin != "127.0.0.1:7070" || d.DataDir != "./fulcrum-data" || d.LogLevel != "info" ||
		d.ShutdownTimeout.D() != 10*time.Second || d.AccessLog != "" || d.AdminToken != "" || len(d.Groups) != 0 {
		t.Fatalf("Default() = %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("Default().Validate(): %v", err)
	}
}

func TestParseFull(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded")
	f, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Admin != "127.0.0.1:7070" || f.AdminToken != "s3cret-admin-token" || f.JoinToken != "join-me" ||
		f.DataDir != "./fulcrum-data" || f.AccessLog != "-" || f.LogLevel != "debug" || f.LogFormat != LogFormatJSON || f.ShutdownTimeout.D() != 15*time.Second ||
		f.HTTPEngine != HTTPEngineStdlib {
		t.Errorf("top level = %+v", f)
	}
	if len(f.Groups) != 1 {
		t.Fatalf("groups = %+v", f.Groups)
	}
	g := f.Groups[0]
	want := protocol.Group{
		Name:           "prime",
		Protocol:       "http",
		FrontDoor:      "127.0.0.1:8000",
		Advertise:      "http://prime.example:8000",
		Binding:        "on-demand",
		Strategy:       "least-loaded",
		ReportInterval: protocol.Duration(500 * time.Millisecond),
		Health: protocol.Health{
			Path: "/healthz", Interval: protocol.Duration(time.Second), Timeout: protocol.Duration(500 * time.Millisecond),
			Rise: 2, Fall: 3,
			Passive: protocol.Passive{ConsecutiveFailures: 5, BaseEjection: protocol.Duration(30 * time.Second), MaxEjectedPercent: 50},
		},
		Timeouts:    protocol.Timeouts{Connect: protocol.Duration(2 * time.Second), Request: protocol.Duration(30 * time.Second), Idle: protocol.Duration(90 * time.Second)},
		MaxInflight: 100,
		Retry:       protocol.RetryIdempotent,
		JoinToken:   "prime-join",
		Replicas: []protocol.StaticReplica{
			{Address: "http://127.0.0.1:9001", Weight: 1},
			{Address: "http://127.0.0.1:9002", Weight: 2},
			{Address: "http://127.0.0.1:9003", Weight: 1, Monitor: protocol.MonitorSpec{Mode: "pull", URL: "http://127.0.0.1:9003/fulcrum/report", Interval: protocol.Duration(time.Second)}},
		},
		Source: protocol.SourceConfig,
	}
	params := g.Params
	g.Params = nil
	if !reflect.DeepEqual(g, want) {
		t.Errorf("group:\n got %+v\nwant %+v", g, want)
	}
	// Params keep what the file says and gain the strategy's defaults.
	if params["dampening"] != 0.5 || params["tolerance"] != 1.05 {
		t.Errorf("params = %v", params)
	}
	d, _ := strategy.Lookup("least-loaded")
	for k := range d.Defaults() {
		if _, ok := params[k]; !ok {
			t.Errorf("params lack the default of %s: %v", k, params)
		}
	}
}

func TestParseGood(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded", "round-robin")
	tests := []struct {
		name  string
		in    string
		check func(t *testing.T, f File)
	}{
		{"issue example", mustRead(t, "testdata/issue.yaml"), func(t *testing.T, f File) {
			g := f.Groups[0]
			if g.Name != "prime" || g.Strategy != "least-loaded" || g.Health.Timeout.D() != 500*time.Millisecond || len(g.Replicas) != 1 {
				t.Errorf("group = %+v", g)
			}
		}},
		{"group defaults", mustRead(t, "testdata/minimal.yaml"), func(t *testing.T, f File) {
			g := f.Groups[0]
			if g.Protocol != "http" || g.Binding != "on-demand" || g.Strategy != "least-loaded" ||
				g.ReportInterval.D() != 500*time.Millisecond || g.Advertise != "http://127.0.0.1:8080" ||
				g.Health.Interval.D() != time.Second || g.Timeouts.Idle.D() != 90*time.Second || g.Source != protocol.SourceConfig {
				t.Errorf("group = %+v", g)
			}
			if f.Admin != DefaultAdmin || f.LogLevel != DefaultLogLevel {
				t.Errorf("top level = %+v", f)
			}
		}},
		{"anchors and merge keys", mustRead(t, "testdata/anchors.yaml"), func(t *testing.T, f File) {
			blue, green := f.Groups[0], f.Groups[1]
			if blue.Name != "blue" || green.Name != "green" || green.Binding != "per-request" || green.Strategy != "round-robin" {
				t.Errorf("groups = %+v", f.Groups)
			}
			if green.Health.Path != "/healthz" || green.Health.Interval.D() != 2*time.Second || green.Health.Timeout.D() != time.Second {
				t.Errorf("green health = %+v", green.Health)
			}
			if blue.Health.Timeout.D() != 500*time.Millisecond {
				t.Errorf("blue health = %+v", blue.Health)
			}
		}},
		{"null values keep defaults", "admin:\nlog_level: ~\nshutdown_timeout:\ngroups:\n", func(t *testing.T, f File) {
			if !reflect.DeepEqual(f, Default()) {
				t.Errorf("f = %+v", f)
			}
		}},
		{"flow style", `{admin: "[::1]:9090", groups: [{name: a, front_door: "[::1]:0", strategy: round-robin}]}`, func(t *testing.T, f File) {
			if f.Admin != "[::1]:9090" || f.Groups[0].Advertise != "http://[::1]:0" {
				t.Errorf("f = %+v", f)
			}
		}},
		{"port 0 twice", "groups:\n  - {name: a, front_door: 127.0.0.1:0}\n  - {name: b, front_door: 127.0.0.1:0}\n", func(t *testing.T, f File) {
			if len(f.Groups) != 2 {
				t.Errorf("groups = %+v", f.Groups)
			}
		}},
		{"same port on different hosts", "groups:\n  - {name: a, front_door: 127.0.0.1:8000}\n  - {name: b, front_door: 127.0.0.2:8000}\n", nil},
		{"numbers and bools as strings", "admin_token: 12345\ngroups:\n  - {name: 7, front_door: 127.0.0.1:8000}\n", func(t *testing.T, f File) {
			if f.AdminToken != "12345" || f.Groups[0].Name != "7" {
				t.Errorf("f = %+v", f)
			}
		}},
		{"durations", "shutdown_timeout: 0s\ngroups:\n  - {name: a, front_door: 127.0.0.1:8000, report_interval: 1m30s, health: {interval: 1h, timeout: 250ms}}\n", func(t *testing.T, f File) {
			g := f.Groups[0]
			if f.ShutdownTimeout != 0 || g.ReportInterval.D() != 90*time.Second || g.Health.Interval.D() != time.Hour || g.Health.Timeout.D() != 250*time.Millisecond {
				t.Errorf("f = %+v", f)
			}
		}},
		{"passive ejection off", "groups:\n  - {name: a, front_door: 127.0.0.1:8000, health: {passive: {consecutive_failures: -1}}}\n", func(t *testing.T, f File) {
			if f.Groups[0].Health.Passive.ConsecutiveFailures != -1 {
				t.Errorf("health = %+v", f.Groups[0].Health)
			}
		}},
		{"http engine stdlib", "http_engine: stdlib\n", func(t *testing.T, f File) {
			if f.HTTPEngine != HTTPEngineStdlib {
				t.Errorf("http_engine = %q", f.HTTPEngine)
			}
		}},
		{"http engine lean by default", "log_level: info\n", func(t *testing.T, f File) {
			if f.HTTPEngine != HTTPEngineLean {
				t.Errorf("http_engine = %q, want the default lean", f.HTTPEngine)
			}
		}},
		{"json log format", "log_format: json\n", func(t *testing.T, f File) {
			if f.LogFormat != LogFormatJSON {
				t.Errorf("log_format = %q", f.LogFormat)
			}
		}},
		{"text log format by default", "log_level: info\n", func(t *testing.T, f File) {
			if f.LogFormat != LogFormatText {
				t.Errorf("log_format = %q, want the default text", f.LogFormat)
			}
		}},
		{"access log file and warn level", "access_log: /var/log/fulcrum/access.log\nlog_level: warn\n", func(t *testing.T, f File) {
			if f.AccessLog != "/var/log/fulcrum/access.log" || f.LogLevel != "warn" {
				t.Errorf("f = %+v", f)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("fulcrum.yaml", []byte(tc.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// base is a valid file; bad inputs below edit it. Its line numbers:
//
//	1 admin        5 front_door   9 health
//	2 groups       6 binding     10 replicas
//	3 - name       7 strategy    11 - address
//	4 protocol     8 report_int  12   weight
const base = `admin: 127.0.0.1:7070
groups:
  - name: prime
    protocol: http
    front_door: 127.0.0.1:8000
    binding: on-demand
    strategy: least-loaded
    report_interval: 500ms
    health: {path: /healthz, interval: 1s, timeout: 500ms}
    replicas:
      - address: http://127.0.0.1:9001
        weight: 1
`

// edit replaces the first occurrence of old in base.
func edit(old, new string) string {
	if !strings.Contains(base, old) {
		panic("edit: " + old + " not in base")
	}
	return strings.Replace(base, old, new, 1)
}

func TestBaseIsValid(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded")
	if _, err := Parse("fulcrum.yaml", []byte(base)); err != nil {
		t.Fatal(err)
	}
}

func TestParseBad(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded", "round-robin")
	second := "  - name: other\n    front_door: 127.0.0.1:8001\n"
	groupKeys := "name, protocol, front_door, advertise, tls, binding, strategy, params, report_interval, health, timeouts, max_inflight, queue, retry, giop, replica_tls, replicated, tcp, affinity, workflow, join_token, replicas"
	topKeys := "admin, admin_token, admin_tls, join_token, data_dir, store, instance, access_log, log_level, log_format, shutdown_timeout, http_engine, groups"
	llKeys := strings.Join(paramNames(t, "least-loaded"), ", ")
	tests := []struct {
		name string
		in   string
		line int
		key  string
		want string // the whole message, or its start when prefix is set
		// prefix is set where the end of the message belongs to a strategy.
		prefix bool
	}{
		// Unknown keys, at every level.
		{"unknown top-level key", "adminn: 127.0.0.1:7070\n", 1, "adminn",
			"fulcrum.yaml:1: adminn: unknown key, allowed keys: " + topKeys, false},
		{"unknown group key", edit("front_door:", "frontdoor:"), 5, "groups[0].frontdoor",
			"fulcrum.yaml:5: groups[0].frontdoor: unknown key, allowed keys: " + groupKeys, false},
		{"unknown health key", edit("path: /healthz", "pth: /healthz"), 9, "groups[0].health.pth",
			"fulcrum.yaml:9: groups[0].health.pth: unknown key, allowed keys: path, interval, timeout, rise, fall, send, expect, passive", false},
		{"unknown passive key", edit("timeout: 500ms}", "timeout: 500ms, passive: {failures: 3}}"), 9, "groups[0].health.passive.failures",
			"fulcrum.yaml:9: groups[0].health.passive.failures: unknown key, allowed keys: consecutive_failures, base_ejection, max_ejected_percent", false},
		{"unknown replica key", edit("weight: 1", "wieght: 1"), 12, "groups[0].replicas[0].wieght",
			"fulcrum.yaml:12: groups[0].replicas[0].wieght: unknown key, allowed keys: address, weight, monitor", false},
		{"unknown monitor key", edit("weight: 1", "monitor: {mode: push, every: 1s}"), 12, "groups[0].replicas[0].monitor.every",
			"fulcrum.yaml:12: groups[0].replicas[0].monitor.every: unknown key, allowed keys: mode, url, interval", false},
		{"unknown timeouts key", edit("binding: on-demand", "timeouts: {read: 1s}"), 6, "groups[0].timeouts.read",
			"fulcrum.yaml:6: groups[0].timeouts.read: unknown key, allowed keys: connect, request, idle", false},
		{"source is not a key", edit("binding: on-demand", "source: api"), 6, "groups[0].source",
			"fulcrum.yaml:6: groups[0].source: unknown key, allowed keys: " + groupKeys, false},
		{"unknown param", edit("strategy: least-loaded", "strategy: least-loaded\n    params: {dampning: 0.5}"), 8, "groups[0].params.dampning",
			"fulcrum.yaml:8: groups[0].params.dampning: unknown key, allowed keys of least-loaded: " + llKeys, false},
		{"param of another strategy", edit("strategy: least-loaded", "strategy: round-robin\n    params:\n      dampening: 0.5"), 9, "groups[0].params.dampening",
			"fulcrum.yaml:9: groups[0].params.dampening: unknown key, round-robin takes no parameters", false},
		{"unknown key in merged anchor", "groups:\n  - &a {name: a, front_door: 127.0.0.1:8000, strategy: round-robin}\n  - <<: *a\n    name: b\n    front_door: 127.0.0.1:8001\n    colour: blue\n", 6, "groups[1].colour",
			"fulcrum.yaml:6: groups[1].colour: unknown key, allowed keys: " + groupKeys, false},

		// Values the decoder cannot take.
		{"duration with words", edit("timeout: 500ms", "timeout: 5 seconds"), 9, "groups[0].health.timeout",
			`fulcrum.yaml:9: groups[0].health.timeout: invalid value "5 seconds", must be a Go duration such as "500ms" or "2s"`, false},
		{"duration without unit", edit("report_interval: 500ms", "report_interval: 500"), 8, "groups[0].report_interval",
			`fulcrum.yaml:8: groups[0].report_interval: invalid value 500, must be a Go duration such as "500ms" or "2s"`, false},
		{"negative duration", "shutdown_timeout: -5s\n", 1, "shutdown_timeout",
			`fulcrum.yaml:1: shutdown_timeout: invalid value "-5s", must not be negative`, false},
		{"duration as a list", "shutdown_timeout: [5s]\n", 1, "shutdown_timeout",
			`fulcrum.yaml:1: shutdown_timeout: invalid value (a list), must be a Go duration such as "500ms" or "2s"`, false},
		{"string for int", edit("binding: on-demand", "max_inflight: lots"), 6, "groups[0].max_inflight",
			`fulcrum.yaml:6: groups[0].max_inflight: invalid value "lots", must be an integer`, false},
		{"float for int", edit("timeout: 500ms}", "timeout: 500ms, rise: 1.5}"), 9, "groups[0].health.rise",
			`fulcrum.yaml:9: groups[0].health.rise: invalid value 1.5, must be an integer`, false},
		{"quoted int", edit("binding: on-demand", `max_inflight: "5"`), 6, "groups[0].max_inflight",
			`fulcrum.yaml:6: groups[0].max_inflight: invalid value "5", must be an integer`, false},
		{"int overflow", edit("binding: on-demand", "max_inflight: 99999999999999999999"), 6, "groups[0].max_inflight",
			`fulcrum.yaml:6: groups[0].max_inflight: invalid value 99999999999999999999, must be an integer`, false},
		{"bool for float", edit("weight: 1", "weight: yes"), 12, "groups[0].replicas[0].weight",
			`fulcrum.yaml:12: groups[0].replicas[0].weight: invalid value "yes", must be a number`, false},
		{"string for float", edit("weight: 1", "weight: heavy"), 12, "groups[0].replicas[0].weight",
			`fulcrum.yaml:12: groups[0].replicas[0].weight: invalid value "heavy", must be a number`, false},
		{"list for string", edit("front_door: 127.0.0.1:8000", "front_door: [127.0.0.1:8000]"), 5, "groups[0].front_door",
			`fulcrum.yaml:5: groups[0].front_door: invalid value (a list), must be a string`, false},
		{"groups as a mapping", "groups:\n  prime: {front_door: 127.0.0.1:8000}\n", 2, "groups",
			`fulcrum.yaml:2: groups: invalid value (a mapping), must be a list`, false},
		{"group as a string", "groups:\n  - prime\n", 2, "groups[0]",
			`fulcrum.yaml:2: groups[0]: invalid value "prime", must be a mapping with keys: ` + groupKeys, false},
		{"health as a number", edit("health: {path: /healthz, interval: 1s, timeout: 500ms}", "health: 5"), 9, "groups[0].health",
			`fulcrum.yaml:9: groups[0].health: invalid value 5, must be a mapping with keys: path, interval, timeout, rise, fall, send, expect, passive`, false},
		{"replicas as a mapping", edit("      - address: http://127.0.0.1:9001\n        weight: 1\n", "      address: http://127.0.0.1:9001\n"), 11, "groups[0].replicas",
			`fulcrum.yaml:11: groups[0].replicas: invalid value (a mapping), must be a list`, false},
		{"params as a number", edit("binding: on-demand", "params: 5"), 6, "groups[0].params",
			`fulcrum.yaml:6: groups[0].params: invalid value 5, must be a mapping`, false},
		{"merge of a scalar", "groups:\n  - <<: 5\n    name: a\n", 2, "groups[0].<<",
			`fulcrum.yaml:2: groups[0].<<: invalid value 5, a merge key (<<) takes a mapping or a list of mappings, usually aliases such as *defaults`, false},
		{"list as a key", "? [admin]\n: x\n", 1, "",
			`fulcrum.yaml:1: invalid value (a list), keys must be plain names`, false},
		{"duplicate key", edit("binding: on-demand", "binding: on-demand\n    binding: per-request"), 7, "groups[0].binding",
			`fulcrum.yaml:7: groups[0].binding: duplicate key, already set on line 6`, false},

		// Replicated groups: sizes, the block's keys and its validation.
		{"size with a bad unit", edit("binding: on-demand", "binding: replicated\n    replicated: {max_payload: 1 MeB}"), 7, "groups[0].replicated.max_payload",
			`fulcrum.yaml:7: groups[0].replicated.max_payload: invalid value "1 MeB", must be a size in bytes such as 1048576 or "1MiB" (units B, KB, MB, GB, KiB, MiB, GiB)`, false},
		{"negative size", edit("binding: on-demand", "binding: replicated\n    replicated: {max_log_bytes: -1}"), 7, "groups[0].replicated.max_log_bytes",
			`fulcrum.yaml:7: groups[0].replicated.max_log_bytes: invalid value -1, must be a size in bytes such as 1048576 or "1MiB" (units B, KB, MB, GB, KiB, MiB, GiB)`, false},
		{"fractional size", edit("binding: on-demand", "binding: replicated\n    replicated: {max_payload: 1.5}"), 7, "groups[0].replicated.max_payload",
			`fulcrum.yaml:7: groups[0].replicated.max_payload: invalid value 1.5, must be a size in bytes such as 1048576 or "1MiB" (units B, KB, MB, GB, KiB, MiB, GiB)`, false},
		{"unknown replicated key", edit("binding: on-demand", "binding: replicated\n    replicated: {max_paylod: 1MiB}"), 7, "groups[0].replicated.max_paylod",
			"fulcrum.yaml:7: groups[0].replicated.max_paylod: unknown key, allowed keys: max_payload, max_log_bytes, session_ttl, read_only", false},
		{"replicated block on another binding", edit("binding: on-demand", "binding: on-demand\n    replicated: {session_ttl: 1m}"), 7, "groups[0].replicated",
			`fulcrum.yaml:7: groups[0].replicated: invalid value (a mapping), is only allowed with binding replicated (the group's binding is on-demand)`, false},
		{"read only pattern", edit("binding: on-demand", "binding: replicated\n    replicated:\n      read_only: [\"GET /value\", \"/balance\"]"), 8, "groups[0].replicated.read_only[1]",
			`fulcrum.yaml:8: groups[0].replicated.read_only[1]: invalid value "/balance", must be a ServeMux pattern "METHOD /path" such as "GET /value" or "GET /balance/{rest...}" (a method is required)`, false},

		// The shape of the file.
		{"root is a list", "- admin: 127.0.0.1:7070\n", 1, "",
			`fulcrum.yaml:1: invalid value (a list), must be a mapping with keys: ` + topKeys, false},
		{"root is a string", "hello\n", 1, "",
			`fulcrum.yaml:1: invalid value "hello", must be a mapping with keys: ` + topKeys, false},
		{"two documents", "admin: 127.0.0.1:7070\n---\nadmin: 127.0.0.1:7071\n", 2, "",
			`fulcrum.yaml:2: syntax error: a config file holds a single YAML document (remove the second '---')`, false},
		// The parser gives the line where the broken construct began.
		{"bad indentation", "groups:\n  - name: a\n   front_door: x\n", 1, "",
			`fulcrum.yaml:1: syntax error: did not find expected '-' indicator`, false},
		{"tab indentation", "groups:\n\t- name: a\n", 2, "",
			`fulcrum.yaml:2: syntax error: found character that cannot start any token`, false},
		{"unclosed flow", "groups: [{name: a\n", 1, "",
			`fulcrum.yaml:1: syntax error: did not find expected ',' or '}'`, false},
		{"unknown alias", "\nadmin: *nope\n", 2, "",
			`fulcrum.yaml:2: syntax error: unknown anchor 'nope' referenced`, false},
		{"invalid UTF-8", "admin: \xff\n", 0, "",
			`fulcrum.yaml: syntax error: invalid leading UTF-8 octet`, false},

		// Group values the registry rejects.
		{"binding", edit("binding: on-demand", "binding: sometimes"), 6, "groups[0].binding",
			`fulcrum.yaml:6: groups[0].binding: invalid value "sometimes", must be one of: per-session, on-demand, per-request, replicated`, false},
		{"protocol", edit("protocol: http", "protocol: udp"), 4, "groups[0].protocol",
			`fulcrum.yaml:4: groups[0].protocol: invalid value "udp", must be one of: http, giop, tcp`, false},
		{"tcp group bound on demand", strings.NewReplacer("protocol: http", "protocol: tcp", "path: /healthz", `path: ""`, "http://127.0.0.1:9001", "127.0.0.1:9001").Replace(base), 6, "groups[0].binding",
			`fulcrum.yaml:6: groups[0].binding: invalid value "on-demand", must be per-request for protocol tcp (each connection is balanced)`, false},
		{"tcp group with a per-call strategy", strings.NewReplacer("protocol: http", "protocol: tcp", "binding: on-demand", "binding: per-request", "strategy: least-loaded", "strategy: peak-ewma", "path: /healthz", `path: ""`, "http://127.0.0.1:9001", "127.0.0.1:9001").Replace(base), 7, "groups[0].strategy",
			`fulcrum.yaml:7: groups[0].strategy: invalid value "peak-ewma", must be one of the strategies that apply per connection: round-robin, random, weighted-round-robin, least-connections, weighted-least-connections, shortest-expected-delay, never-queue, power-of-two, consistent-hash, least-loaded`, false},
		{"tcp group with a health path", strings.NewReplacer("protocol: http", "protocol: tcp", "binding: on-demand", "binding: per-request", "http://127.0.0.1:9001", "127.0.0.1:9001").Replace(base), 9, "groups[0].health.path",
			`fulcrum.yaml:9: groups[0].health.path: invalid value "/healthz", must be empty for tcp groups (they probe with a TCP connect, or health.send and health.expect)`, false},
		{"giop group with a health path", strings.NewReplacer("protocol: http", "protocol: giop", "http://127.0.0.1:9001", "corbaloc:iiop:1.2@127.0.0.1:9001/key").Replace(base), 9, "groups[0].health.path",
			`fulcrum.yaml:9: groups[0].health.path: invalid value "/healthz", must be empty for giop groups (they probe with a GIOP LocateRequest)`, false},
		{"giop group with an http replica", strings.NewReplacer("protocol: http", "protocol: giop", "path: /healthz", `path: ""`).Replace(base), 11, "groups[0].replicas[0].address",
			`fulcrum.yaml:11: groups[0].replicas[0].address: invalid value "http://127.0.0.1:9001", must be a stringified IOR (IOR:...) or a corbaloc:iiop: URL such as corbaloc:iiop:1.2@10.0.0.5:2809/key`, false},
		{"strategy", edit("strategy: least-loaded", "strategy: fastest"), 7, "groups[0].strategy",
			`fulcrum.yaml:7: groups[0].strategy: invalid value "fastest", must be one of: ` + strings.Join(strategy.Names(), ", "), false},
		{"param out of range", edit("strategy: least-loaded", "strategy: least-loaded\n    params: {dampening: 1.5}"), 8, "groups[0].params.dampening",
			`fulcrum.yaml:8: groups[0].params.dampening: invalid value 1.5, least-loaded: `, true},
		{"param of the wrong type", edit("strategy: least-loaded", "strategy: least-loaded\n    params:\n      tolerance: high"), 9, "groups[0].params.tolerance",
			`fulcrum.yaml:9: groups[0].params.tolerance: invalid value "high", least-loaded: `, true},
		{"params not encodable", edit("strategy: least-loaded", "strategy: least-loaded\n    params: {dampening: .nan}"), 8, "groups[0].params",
			`fulcrum.yaml:8: groups[0].params: invalid value (a mapping), least-loaded: `, true},
		{"name", edit("name: prime", "name: Prime"), 3, "groups[0].name",
			`fulcrum.yaml:3: groups[0].name: invalid value "Prime", must match [a-z0-9-]+, 1 to 63 characters, not starting or ending with '-'`, false},
		{"missing name", edit("  - name: prime\n    protocol: http\n", "  - protocol: http\n"), 3, "groups[0].name",
			`fulcrum.yaml:3: groups[0].name: invalid value "", must match [a-z0-9-]+, 1 to 63 characters, not starting or ending with '-'`, false},
		{"empty group", "groups:\n  -\n", 2, "groups[0]",
			`fulcrum.yaml:2: groups[0]: invalid value (empty), a list item must not be empty`, false},
		{"empty replica", edit("      - address: http://127.0.0.1:9001\n        weight: 1\n", "      - ~\n"), 11, "groups[0].replicas[0]",
			`fulcrum.yaml:11: groups[0].replicas[0]: invalid value (empty), a list item must not be empty`, false},
		{"missing front door", edit("    front_door: 127.0.0.1:8000\n", ""), 3, "groups[0].front_door",
			`fulcrum.yaml:3: groups[0].front_door: invalid value "", must be host:port with a port in 0-65535, 0 meaning any free port (missing port in address)`, false},
		{"front door port", edit("127.0.0.1:8000", "127.0.0.1:80000"), 5, "groups[0].front_door",
			`fulcrum.yaml:5: groups[0].front_door: invalid value "127.0.0.1:80000", must be host:port with a port in 0-65535, 0 meaning any free port (port "80000" out of range)`, false},
		{"advertise", edit("binding: on-demand", "advertise: ftp://prime:21"), 6, "groups[0].advertise",
			`fulcrum.yaml:6: groups[0].advertise: invalid value "ftp://prime:21", must be an http:// or https:// URL`, false},
		{"report interval too short", edit("report_interval: 500ms", "report_interval: 1ms"), 8, "groups[0].report_interval",
			`fulcrum.yaml:8: groups[0].report_interval: invalid value "1ms", must be a duration in [10ms, 1h0m0s]`, false},
		{"health timeout above interval", edit("timeout: 500ms", "timeout: 2s"), 9, "groups[0].health.timeout",
			`fulcrum.yaml:9: groups[0].health.timeout: invalid value "2s", must be a duration in [1ms, 1s] (at most health.interval)`, false},
		{"default health timeout above interval", edit("health: {path: /healthz, interval: 1s, timeout: 500ms}", "health:\n      interval: 100ms"), 9, "groups[0].health.timeout",
			`fulcrum.yaml:9: groups[0].health.timeout: invalid value "500ms", must be a duration in [1ms, 100ms] (at most health.interval)`, false},
		{"health path", edit("path: /healthz", "path: healthz"), 9, "groups[0].health.path",
			`fulcrum.yaml:9: groups[0].health.path: invalid value "healthz", must start with '/'`, false},
		{"health rise", edit("timeout: 500ms}", "timeout: 500ms, rise: 101}"), 9, "groups[0].health.rise",
			`fulcrum.yaml:9: groups[0].health.rise: invalid value 101, must be in [1,100]`, false},
		{"max ejected percent", edit("timeout: 500ms}", "timeout: 500ms, passive: {max_ejected_percent: 150}}"), 9, "groups[0].health.passive.max_ejected_percent",
			`fulcrum.yaml:9: groups[0].health.passive.max_ejected_percent: invalid value 150, must be in [0,100]`, false},
		{"idle timeout", edit("binding: on-demand", "timeouts:\n      idle: 48h"), 7, "groups[0].timeouts.idle",
			`fulcrum.yaml:7: groups[0].timeouts.idle: invalid value "48h", must be a duration in [1ms, 24h0m0s]`, false},
		{"max inflight", edit("binding: on-demand", "max_inflight: -1"), 6, "groups[0].max_inflight",
			`fulcrum.yaml:6: groups[0].max_inflight: invalid value -1, must be in [0,1000000] (0: no limit)`, false},
		{"replica address", edit("http://127.0.0.1:9001", "ftp://127.0.0.1:9001"), 11, "groups[0].replicas[0].address",
			`fulcrum.yaml:11: groups[0].replicas[0].address: invalid value "ftp://127.0.0.1:9001", must be an absolute http:// or https:// URL such as http://10.0.0.5:9001`, false},
		{"duplicate replica", edit("weight: 1\n", "weight: 1\n      - address: http://127.0.0.1:9001/\n"), 13, "groups[0].replicas[1].address",
			`fulcrum.yaml:13: groups[0].replicas[1].address: invalid value "http://127.0.0.1:9001/", must be unique in the group (also replicas[0])`, false},
		{"replica weight", edit("weight: 1", "weight: -2"), 12, "groups[0].replicas[0].weight",
			`fulcrum.yaml:12: groups[0].replicas[0].weight: invalid value -2, must be in (0, 1000000]`, false},
		{"replica weight zero", edit("weight: 1", "weight: 0"), 12, "groups[0].replicas[0].weight",
			`fulcrum.yaml:12: groups[0].replicas[0].weight: invalid value 0, must be in (0, 1000000]; leave weight out for the default of 1`, false},
		{"replica weight zero as a float", edit("weight: 1", "weight: 0.0"), 12, "groups[0].replicas[0].weight",
			`fulcrum.yaml:12: groups[0].replicas[0].weight: invalid value 0.0, must be in (0, 1000000]; leave weight out for the default of 1`, false},
		{"monitor mode", edit("weight: 1", "monitor: {mode: poll}"), 12, "groups[0].replicas[0].monitor.mode",
			`fulcrum.yaml:12: groups[0].replicas[0].monitor.mode: invalid value "poll", must be push or pull`, false},
		{"monitor url in push mode", edit("weight: 1", "monitor:\n          url: http://127.0.0.1:9001/report"), 13, "groups[0].replicas[0].monitor.url",
			`fulcrum.yaml:13: groups[0].replicas[0].monitor.url: invalid value "http://127.0.0.1:9001/report", is only allowed with mode pull`, false},

		// Across groups.
		{"duplicate group name", base + "  - name: prime\n    front_door: 127.0.0.1:8001\n", 13, "groups[1].name",
			`fulcrum.yaml:13: groups[1].name: invalid value "prime", must be unique among groups (groups[0] has it too)`, false},
		{"duplicate front door", base + "  - name: other\n    front_door: 127.0.0.1:8000\n", 14, "groups[1].front_door",
			`fulcrum.yaml:14: groups[1].front_door: invalid value "127.0.0.1:8000", must not be an address another listener uses (groups[0] listens on 127.0.0.1:8000)`, false},
		{"front door on a wildcard", base + "  - name: other\n    front_door: :8000\n", 14, "groups[1].front_door",
			`fulcrum.yaml:14: groups[1].front_door: invalid value ":8000", must not be an address another listener uses (groups[0] listens on 127.0.0.1:8000)`, false},
		{"front door on the admin address", edit("127.0.0.1:8000", "127.0.0.1:7070"), 5, "groups[0].front_door",
			`fulcrum.yaml:5: groups[0].front_door: invalid value "127.0.0.1:7070", must not be an address another listener uses (admin listens on 127.0.0.1:7070)`, false},
		{"replica at its own front door", edit("http://127.0.0.1:9001", "http://localhost:8000"), 11, "groups[0].replicas[0].address",
			`fulcrum.yaml:11: groups[0].replicas[0].address: invalid value "http://localhost:8000", must not lead back into this balancer, but it is the front door of group "prime" (127.0.0.1:8000)`, false},
		{"replica at the admin API", edit("http://127.0.0.1:9001", "http://127.0.0.1:7070/"), 11, "groups[0].replicas[0].address",
			`fulcrum.yaml:11: groups[0].replicas[0].address: invalid value "http://127.0.0.1:7070/", must not lead back into this balancer, but it is the admin API (127.0.0.1:7070)`, false},
		{"replica at another group's front door", base + second + "    replicas: [{address: \"http://0.0.0.0:8000\"}]\n", 15, "groups[1].replicas[0].address",
			`fulcrum.yaml:15: groups[1].replicas[0].address: invalid value "http://0.0.0.0:8000", must not lead back into this balancer, but it is the front door of group "prime" (127.0.0.1:8000)`, false},
		{"giop replica at a front door", strings.NewReplacer("protocol: http", "protocol: giop", "path: /healthz", `path: ""`, "http://127.0.0.1:9001", "corbaloc:iiop:1.2@127.0.0.1:8000/key").Replace(base), 11, "groups[0].replicas[0].address",
			`fulcrum.yaml:11: groups[0].replicas[0].address: invalid value "corbaloc:iiop:1.2@127.0.0.1:8000/key", must not lead back into this balancer, but it is the front door of group "prime" (127.0.0.1:8000)`, false},
		{"second group checked", base + second + "    binding: never\n", 15, "groups[1].binding",
			`fulcrum.yaml:15: groups[1].binding: invalid value "never", must be one of: per-session, on-demand, per-request, replicated`, false},

		// Top-level values.
		{"admin", edit("admin: 127.0.0.1:7070", "admin: localhost"), 1, "admin",
			`fulcrum.yaml:1: admin: invalid value "localhost", must be host:port with a port in 0-65535, such as 127.0.0.1:7070`, false},
		{"admin empty string", `admin: ""` + "\n", 1, "admin",
			`fulcrum.yaml:1: admin: invalid value "", must be host:port with a port in 0-65535, such as 127.0.0.1:7070`, false},
		{"admin token with a space", "admin_token: two words\n", 1, "admin_token",
			`fulcrum.yaml:1: admin_token: invalid value "(hidden)", must be printable ASCII without spaces`, false},
		{"join token too long", "join_token: " + strings.Repeat("j", 513) + "\n", 1, "join_token",
			`fulcrum.yaml:1: join_token: invalid value "(hidden)", must be at most 512 characters`, false},
		{"data dir", `data_dir: ""` + "\n", 1, "data_dir",
			`fulcrum.yaml:1: data_dir: invalid value "", must be a directory path`, false},
		{"log level", "log_level: verbose\n", 1, "log_level",
			`fulcrum.yaml:1: log_level: invalid value "verbose", must be one of: debug, info, warn, error`, false},
		{"log level case", "log_level: INFO\n", 1, "log_level",
			`fulcrum.yaml:1: log_level: invalid value "INFO", must be one of: debug, info, warn, error`, false},
		{"log format", "log_format: logfmt\n", 1, "log_format",
			`fulcrum.yaml:1: log_format: invalid value "logfmt", must be one of: text, json`, false},
		{"log format case", "log_format: JSON\n", 1, "log_format",
			`fulcrum.yaml:1: log_format: invalid value "JSON", must be one of: text, json`, false},
		{"log format empty", "log_format: \"\"\n", 1, "log_format",
			`fulcrum.yaml:1: log_format: invalid value "", must be one of: text, json`, false},
		{"http engine", "http_engine: nginx\n", 1, "http_engine",
			`fulcrum.yaml:1: http_engine: invalid value "nginx", must be one of: lean, stdlib`, false},
		{"http engine empty", "http_engine: \"\"\n", 1, "http_engine",
			`fulcrum.yaml:1: http_engine: invalid value "", must be one of: lean, stdlib`, false},
		{"shutdown timeout", "\n\nshutdown_timeout: 2h\n", 3, "shutdown_timeout",
			`fulcrum.yaml:3: shutdown_timeout: invalid value "2h", must be a duration in [0s, 1h]`, false},
		{"access log with a newline", `access_log: "a\nb"` + "\n", 1, "access_log",
			`fulcrum.yaml:1: access_log: invalid value "a\nb", must be "" (off), "-" (stderr) or a file path`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("fulcrum.yaml", []byte(tc.in))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse = %+v, %v; want a *config.Error\ninput:\n%s", f, err, tc.in)
			}
			msg := err.Error()
			if tc.prefix && !strings.HasPrefix(msg, tc.want) || !tc.prefix && msg != tc.want {
				t.Errorf("error:\n got %s\nwant %s", msg, tc.want)
			}
			if e.Line != tc.line || e.Key != tc.key || e.File != "fulcrum.yaml" {
				t.Errorf("at %s:%d key %q, want fulcrum.yaml:%d key %q", e.File, e.Line, e.Key, tc.line, tc.key)
			}
			if !reflect.DeepEqual(f, File{}) {
				t.Errorf("Parse returned %+v with an error", f)
			}
		})
	}
}

// paramNames lists a strategy's parameters, sorted.
func paramNames(t *testing.T, name string) []string {
	t.Helper()
	d, ok := strategy.Lookup(name)
	if !ok {
		t.Fatalf("strategy %s not registered", name)
	}
	var names []string
	for k := range d.Defaults() {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func TestAliasBomb(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded")
	// Each level refers to the previous one nine times: 9^9 nodes when
	// expanded. Parse must refuse it quickly, not expand it.
	bomb := func(indent string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%sx0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9]\n", indent)
		for i := 1; i <= 9; i++ {
			p := fmt.Sprintf("*a%d", i-1)
			fmt.Fprintf(&b, "%sx%d: &a%d [%s, %s, %s, %s, %s, %s, %s, %s, %s]\n", indent, i, i, p, p, p, p, p, p, p, p, p)
		}
		return b.String()
	}
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"at the top", bomb(""), "fulcrum.yaml:1: x0: unknown key, allowed keys: "},
		{"under params", "groups:\n  - name: a\n    front_door: 127.0.0.1:8000\n    params:\n" + bomb("      "),
			"fulcrum.yaml:5: groups[0].params: invalid value (a mapping), document contains excessive aliasing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("fulcrum.yaml", []byte(tc.in))
			var e *Error
			if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want %s...", err, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "missing.yaml"))
	var e *Error
	if !errors.As(err, &e) || e.Problem != ProblemRead {
		t.Fatalf("Load of a missing file = %v, want a *config.Error", err)
	}
	if want := filepath.Join(dir, "missing.yaml") + ": cannot read file, no such file or directory"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}

	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); !errors.As(err, &e) || !strings.Contains(err.Error(), "at most") {
		t.Errorf("Load of a big file = %v", err)
	}

	path := filepath.Join(dir, "fulcrum.yaml")
	if err := os.WriteFile(path, []byte("log_level: warn\nlog_level: error\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if want := path + ":2: log_level: duplicate key, already set on line 1"; err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %s", err, want)
	}
	if err := os.WriteFile(path, []byte("log_level: warn\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := Load(path); err != nil || f.LogLevel != "warn" {
		t.Errorf("Load = %+v, %v", f, err)
	}
}

func TestErrorFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "f.yaml", Line: 7, Key: "groups[0].binding", Problem: ProblemInvalid, Value: `"x"`, Allowed: "must be y"}, `f.yaml:7: groups[0].binding: invalid value "x", must be y`},
		{Error{File: "f.yaml", Line: 4, Key: "a", Problem: ProblemUnknown, Allowed: "allowed keys: b, c"}, `f.yaml:4: a: unknown key, allowed keys: b, c`},
		{Error{File: "f.yaml", Line: 2, Problem: ProblemSyntax + ": bad"}, `f.yaml:2: syntax error: bad`},
		{Error{File: "f.yaml", Problem: ProblemRead, Allowed: "permission denied"}, `f.yaml: cannot read file, permission denied`},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	if got := formatValue(strings.Repeat("é", 100)); !strings.HasSuffix(got, `..."`) || len(got) > maxValueLen+8 {
		t.Errorf("long value = %s", got)
	}
}

func TestSplitPathAndLocate(t *testing.T) {
	t.Parallel()
	steps := splitPath("groups[0].replicas[12].monitor.url")
	want := []pathStep{{"groups", -1}, {"", 0}, {"replicas", -1}, {"", 12}, {"monitor", -1}, {"url", -1}}
	if !reflect.DeepEqual(steps, want) {
		t.Fatalf("splitPath = %+v", steps)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(base), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for path, line := range map[string]int{
		"admin":                         1,
		"groups":                        2,
		"groups[0]":                     3,
		"groups[0].name":                3,
		"groups[0].health":              9,
		"groups[0].health.timeout":      9,
		"groups[0].health.passive.x":    9,
		"groups[0].replicas[0].weight":  12,
		"groups[0].replicas[0].monitor": 11,
		"groups[0].replicas[5].address": 10,
		"groups[3].name":                2,
		"nowhere":                       0,
	} {
		n, _ := locate(root, path)
		got := 0
		if n != nil {
			got = n.Line
		}
		if got != line {
			t.Errorf("locate(%s) at line %d, want %d", path, got, line)
		}
	}
}

// FuzzParse checks that Parse never panics and that every error it
// returns is an *Error for the file; a file it accepts passes Validate
// and survives being written back out and parsed again.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		base,
		"groups:\n  - <<: [*a, *b]\n",
		"a: &a {b: *a}\n",
		"groups: [{name: x, front_door: ':0', params: {k: [1, {x: y}]}}]\n",
		"groups:\n  - name: a\n    front_door: 127.0.0.1:1\n    params: {1: 2, .inf: .nan}\n",
		"? [a]\n: b\n",
		"shutdown_timeout: !!binary aGVsbG8=\n",
		"%YAML 1.2\n---\nadmin: x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != "fuzz.yaml" {
				t.Fatalf("error %v (%T) is not a *config.Error for fuzz.yaml", err, err)
			}
			_ = e.Error()
			return
		}
		if err := file.Validate(); err != nil {
			t.Fatalf("accepted file fails Validate: %v", err)
		}
		out, err := yaml.Marshal(file)
		if err != nil {
			t.Fatalf("Marshal accepted file: %v", err)
		}
		again, err := Parse("again.yaml", out)
		if err != nil {
			t.Fatalf("accepted file written back is rejected: %v\n%s", err, out)
		}
		if len(again.Groups) != len(file.Groups) || again.Admin != file.Admin {
			t.Fatalf("written back and parsed again: %+v, was %+v", again, file)
		}
	})
}

// TestDocExamples parses every YAML example of docs/config.md.
func TestDocExamples(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded", "power-of-two")
	doc := mustRead(t, "../../docs/config.md")
	var blocks []string
	var cur []string
	indent, in := "", false
	for line := range strings.SplitSeq(doc, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case !in && trimmed == "```yaml":
			in, indent, cur = true, line[:len(line)-len(trimmed)], nil
		case in && trimmed == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, strings.TrimPrefix(line, indent))
		}
	}
	if len(blocks) < 3 {
		t.Fatalf("found %d YAML examples in docs/config.md", len(blocks))
	}
	for i, b := range blocks {
		if _, err := Parse(fmt.Sprintf("example-%d.yaml", i+1), []byte(b)); err != nil {
			t.Errorf("docs/config.md example %d: %v\n%s", i+1, err, b)
		}
	}
}

// A replicated group's sizes take units, and its defaults are filled.
func TestParseReplicated(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded")
	f, err := Parse("fulcrum.yaml", []byte(strings.Replace(base, "binding: on-demand",
		"binding: replicated\n    replicated:\n      max_payload: 64KiB\n      read_only: [\"GET /value\", \"GET /balance/{rest...}\"]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	r := f.Groups[0].Replicated
	if r.MaxPayload != 64<<10 || r.MaxLogBytes != 256<<20 || r.SessionTTL.D() != 10*time.Minute || len(r.ReadOnly) != 2 {
		t.Errorf("replicated = %+v, want max_payload 64KiB and the defaults", r)
	}
}

// With store.etcd a replicated group's max_payload must fit one etcd
// request.
func TestParseReplicatedOnEtcd(t *testing.T) {
	t.Parallel()
	needStrategies(t, "least-loaded")
	file := func(size string) []byte {
		return []byte("store:\n  etcd:\n    endpoints: [http://127.0.0.1:2379]\n" + strings.Replace(base, "binding: on-demand",
			"binding: replicated\n    replicated: {max_payload: "+size+"}", 1))
	}
	if _, err := Parse("fulcrum.yaml", file("1MiB")); err != nil {
		t.Errorf("1MiB on etcd: %v", err)
	}
	_, err := Parse("fulcrum.yaml", file("2MiB"))
	want := `fulcrum.yaml:10: groups[0].replicated.max_payload: invalid value "2MiB", must be at most 1532KiB with store.etcd`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("2MiB on etcd: %v, want %q…", err, want)
	}
}
