package etcdtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// StartTimeout bounds the wait for a new cluster to be healthy.
const StartTimeout = 30 * time.Second

// ErrNoBinary is wrapped by Binary and Start when etcd is not installed.
var ErrNoBinary = errors.New("etcdtest: etcd is not installed (scripts/test.sh installs Debian's etcd-server)")

// Options of a cluster. The zero value is one member.
type Options struct {
	// Members is the number of members; 0 means 1.
	Members int
	// Dir holds the members' data directories and logs; empty: a new
	// temporary directory, removed by Close.
	Dir string
	// TLS, when set, makes the client URLs https:// and requires client
	// certificates signed by its CA (peers stay plain http on loopback).
	TLS *TLS
}

// TLS is the client side of a cluster's TLS. Files are PEM.
type TLS struct {
	// CA signs the client certificates the members accept.
	CA string
	// Cert and Key are the members' server pair (valid for 127.0.0.1).
	Cert, Key string
	// ClientCert and ClientKey are the pair the harness's health calls
	// present.
	ClientCert, ClientKey string
}

// Cluster is a running etcd cluster. Its methods are safe for concurrent
// use.
type Cluster struct {
	members []*Member
	dir     string
	ownDir  bool
}

// Member is one etcd process of a cluster.
type Member struct {
	Name      string
	ClientURL string // http://127.0.0.1:port
	PeerURL   string
	args      []string
	bin       string
	logPath   string

	http *http.Client // for health calls

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Binary returns the path of the etcd binary, or an error wrapping
// ErrNoBinary.
func Binary() (string, error) {
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/etcd"); err == nil {
		return "/usr/bin/etcd", nil
	}
	return "", ErrNoBinary
}

// Need fails t when etcd is not installed and CI=true, and skips it
// otherwise.
func Need(t testing.TB) {
	t.Helper()
	if _, err := Binary(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("etcd is required (CI=true): %v", err)
		}
		t.Skip(err)
	}
}

// New starts a cluster for t (data under t.TempDir()) and closes it at
// t's cleanup. A missing binary fails t with CI=true and skips it
// otherwise; any other failure to start fails t.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	Need(t)
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	c, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Start starts a cluster and waits until every member is healthy.
func Start(opts Options) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	n := max(opts.Members, 1)
	c := &Cluster{dir: opts.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "etcdtest-"); err != nil {
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
		c.ownDir = true
	}
	hc, scheme := http.DefaultClient, "http://"
	if opts.TLS != nil {
		if hc, err = tlsClient(opts.TLS); err != nil {
			c.Close()
			return nil, err
		}
		scheme = "https://"
	}
	var initial []string
	taken := map[string]bool{}
	for i := range n {
		client, err := freePort(taken)
		if err != nil {
			c.Close()
			return nil, err
		}
		peer, err := freePort(taken)
		if err != nil {
			c.Close()
			return nil, err
		}
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: scheme + client,
			http:      hc,
			PeerURL:   "http://" + peer,
			bin:       bin,
			logPath:   filepath.Join(c.dir, fmt.Sprintf("m%d.log", i)),
		}
		c.members = append(c.members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.members {
		m.args = []string{
			"--name", m.Name,
			"--data-dir", filepath.Join(c.dir, m.Name+".etcd"),
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "etcdtest-" + filepath.Base(c.dir),
			// Fast elections on loopback, but not so fast that a loaded
			// test machine makes the members elect again and again.
			"--heartbeat-interval", "50", "--election-timeout", "500",
			"--logger", "zap", "--log-level", "warn",
		}
		if opts.TLS != nil {
			m.args = append(m.args, "--cert-file", opts.TLS.Cert, "--key-file", opts.TLS.Key,
				"--trusted-ca-file", opts.TLS.CA, "--client-cert-auth")
		}
		if err := m.Start(); err != nil {
			c.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := c.WaitHealthy(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// freePort returns 127.0.0.1:port free now and not in taken (to which it
// adds it), drawn below the ephemeral range (32768 on) so that outgoing
// connections do not take it meanwhile.
func freePort(taken map[string]bool) (string, error) {
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(10000+rand.IntN(32768-10000)))
		if taken[addr] {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken: draw again
		}
		ln.Close()
		taken[addr] = true
		return addr, nil
	}
	return "", errors.New("etcdtest: no free port below the ephemeral range in 100 draws")
}

// Endpoints are the client URLs of every member.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Members returns the cluster's members, in the order of their names.
func (c *Cluster) Members() []*Member { return c.members }

// Member returns member i.
func (c *Cluster) Member(i int) *Member { return c.members[i] }

// Close kills every member, waits for them, and removes the data when
// Start made its directory.
func (c *Cluster) Close() {
	for _, m := range c.members {
		m.Kill()
		if m.http != nil {
			m.http.CloseIdleConnections()
		}
	}
	if c.ownDir {
		os.RemoveAll(c.dir)
	}
}

// WaitHealthy waits until every running member answers etcd's /health
// with true (which needs a leader and a quorum), or ctx ends.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	for _, m := range c.members {
		if !m.Running() {
			continue
		}
		if err := m.WaitHealthy(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Start starts the member's process (again, on its data directory).
func (m *Member) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return fmt.Errorf("etcdtest: %s is already running", m.Name)
	}
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("etcdtest: %w", err)
	}
	cmd := exec.Command(m.bin, m.args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("etcdtest: start %s: %w", m.Name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		log.Close()
		close(done)
	}()
	m.cmd, m.done = cmd, done
	return nil
}

// Running tells whether the member's process was started and not stopped
// or killed through m.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil
}

// WaitHealthy waits until the member answers /health with true, or ctx
// ends, or the process exits.
func (m *Member) WaitHealthy(ctx context.Context) error {
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	if done == nil {
		return fmt.Errorf("etcdtest: %s is not running", m.Name)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = m.health(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcdtest: %s not healthy: %w (last: %v; log %s)", m.Name, ctx.Err(), last, m.logTail())
		case <-done:
			return fmt.Errorf("etcdtest: %s exited before it was healthy (log %s)", m.Name, m.logTail())
		case <-tick.C:
		}
	}
}

// health is one call of the member's /health.
func (m *Member) health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.ClientURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct{ Health string }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return fmt.Errorf("/health: %w", err)
	}
	if h.Health != "true" {
		return fmt.Errorf("/health: %s %q", resp.Status, h.Health)
	}
	return nil
}

// logTail is the end of the member's log, for errors.
// LogTail is the end of the member's log (for a failing test's message).
func (m *Member) LogTail() string { return m.logTail() }

func (m *Member) logTail() string {
	b, _ := os.ReadFile(m.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return m.logPath + ":\n" + string(b)
}

// Stop stops the member with SIGTERM and waits for it to exit.
func (m *Member) Stop() { m.end(syscall.SIGTERM) }

// Kill kills the member with SIGKILL (kill -9) and waits for it to exit.
func (m *Member) Kill() { m.end(syscall.SIGKILL) }

func (m *Member) end(sig syscall.Signal) {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd, m.done = nil, nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	cmd.Process.Signal(syscall.SIGCONT) // a paused member must run to die of SIGTERM
	<-done
}

// Pause stops the member's process with SIGSTOP: it keeps its sockets
// but answers nothing until Resume. It returns once every thread of the
// process has stopped (kill returns before that: a thread the signal has
// not reached yet could still answer a call).
func (m *Member) Pause() error {
	if err := m.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("etcdtest: %s is not running", m.Name)
	}
	// WNOWAIT leaves the report for nobody else to miss; os/exec's own
	// wait takes only the exit.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("etcdtest: wait for %s to stop: %w", m.Name, err)
		}
		return nil
	}
}

// Resume continues a paused member (SIGCONT).
func (m *Member) Resume() error { return m.signal(syscall.SIGCONT) }

func (m *Member) signal(sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("etcdtest: %s is not running", m.Name)
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("etcdtest: signal %s: %w", m.Name, err)
	}
	return nil
}

// tlsClient is an HTTP client that trusts o.CA and presents the client
// pair.
func tlsClient(o *TLS) (*http.Client, error) {
	ca, err := os.ReadFile(o.CA)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("etcdtest: no certificate in %s", o.CA)
	}
	pair, err := tls.LoadX509KeyPair(o.ClientCert, o.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: client pair: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}
	return &http.Client{Transport: tr}, nil
}
