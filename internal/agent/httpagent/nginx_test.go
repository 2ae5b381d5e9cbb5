package httpagent_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent"
	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent/nginxreplica"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// nginxBin is Debian's NGINX (scripts/test.sh installs it).
const nginxBin = "/usr/sbin/nginx"

// needNGINX skips the test without NGINX, and fails it on CI.
func needNGINX(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(nginxBin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s missing on CI: %v (scripts/test.sh installs nginx)", nginxBin, err)
		}
		t.Skipf("%s missing: %v", nginxBin, err)
	}
}

// nginx is a real NGINX (a master and one worker) serving static files
// from www, with stub_status at /nginx_status, /fulcrum/probe passed to
// an agent, and /slow/ sent at 2 KB/s.
type nginx struct {
	url string
	pid int // the master's
	www string
}

// startNGINX starts NGINX on a free loopback port. agent is the host:port
// /fulcrum/probe is passed to ("" for none).
func startNGINX(t *testing.T, agent string) *nginx {
	t.Helper()
	needNGINX(t)
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(filepath.Join(www, "slow"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(www, "1k"), make([]byte, 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(www, "slow", "big"), make([]byte, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // the free port may be taken meanwhile
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		// nginxreplica's configuration, the one docs/agents.md shows.
		c := nginxreplica.Config{
			Dir: dir, Listen: addr, Agent: agent, WorkerConnections: 256,
			Server: "        location /slow/ { limit_rate 2k; }\n",
		}
		if os.Geteuid() == 0 {
			c.User = "root" // the workers read the test's private temp dir
		}
		conf, err := nginxreplica.Render(c)
		if err != nil {
			t.Fatal(err)
		}
		confPath := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(nginxBin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		n := &nginx{url: "http://" + addr, pid: cmd.Process.Pid, www: www}
		if err := waitOK(n.url+"/nginx_status", exited, 10*time.Second); err != nil {
			stop()
			errLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			lastErr = fmt.Errorf("nginx did not start: %v\n%s%s", err, out.String(), errLog)
			continue
		}
		t.Cleanup(stop)
		return n
	}
	t.Fatal(lastErr)
	return nil
}

// waitOK polls url until it answers 200, the process exits or d passes.
func waitOK(url string, exited <-chan struct{}, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %s", url, resp.Status)
		}
		select {
		case <-exited:
			return fmt.Errorf("exited (%v)", err)
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// TestAgentTimesAStalledNGINX stops a real NGINX (SIGSTOP to its process
// group) for 300 ms from the moment the agent's stub_status request
// reaches it. The read cannot
// finish before NGINX runs again, and with no client request in the
// window the agent's latency estimate is its reads' mean time: a load
// probe right after averages the stalled read and its own, so it answers
// at least about 150 ms, where an NGINX at rest answers in well under a
// millisecond.
func TestAgentTimesAStalledNGINX(t *testing.T) {
	n := startNGINX(t, "")
	agent, err := httpagent.New(httpagent.Config{StubStatus: n.url + "/nginx_status", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := agent.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if lp := agent.LoadProbe(ctx); lp.LatencyMS <= 0 || lp.LatencyMS >= 100 {
		t.Fatalf("NGINX at rest: probe %+v, want a latency in (0, 100) ms", lp)
	}
	if err := syscall.Kill(-n.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(-n.pid, syscall.SIGCONT)
		}
	}
	defer resume()
	// The read's request written to NGINX's socket is the signal that the
	// read is under way; NGINX cannot answer it until it runs again.
	written := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(written) }) }}
	done := make(chan bool, 1)
	go func() { done <- agent.Sample(httptrace.WithClientTrace(ctx, trace)) }()
	select {
	case <-written:
	case ok := <-done:
		t.Fatalf("the stub_status read ended (ok %v) before its request reached the stopped NGINX", ok)
	}
	// The stimulus: NGINX stays stopped for 300 ms after the request
	// reached it, and the read must not finish at any time in them.
	stall := time.NewTimer(300 * time.Millisecond)
	defer stall.Stop()
	select {
	case ok := <-done:
		t.Fatalf("a stub_status read finished (ok %v) while NGINX was stopped", ok)
	case <-stall.C:
	}
	resume()
	if !<-done {
		t.Fatal("the stalled stub_status read failed")
	}
	lp := agent.LoadProbe(ctx)
	if lp.LatencyMS < 100 {
		t.Errorf("after a 300 ms stall: probe %+v, want a latency of at least 100 ms", lp)
	}
	if m := agent.Metrics(time.Now()); m[protocol.MetricLatencyMS] < 50 || m[protocol.MetricRPS] != 0 {
		t.Errorf("report after the stall: %v, want rps 0 and latency_ms of at least 50 (one stalled read of three)", m)
	}
}
