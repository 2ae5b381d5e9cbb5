package balancer_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/certs/certstest"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// serveAdminTLS serves n's admin API over TLS with pair as well, and
// makes the cluster call n there (https://).
func (c *testCluster) serveAdminTLS(n *clusterNode, pair certstest.Pair) {
	c.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	srv := &http.Server{Handler: n.srv.Handler, ErrorLog: log.New(io.Discard, "", 0)} // the refused handshakes are the point
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair.TLS}, MinVersion: tls.VersionTLS12}))
	}()
	c.t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	c.mu.Lock()
	c.urls[n.name] = "https://" + ln.Addr().String()
	c.mu.Unlock()
}

// pushFailures scrapes fulcrum_cluster_push_failures_total{kind} from an
// instance's /metrics.
func pushFailures(t *testing.T, n *clusterNode, kind string) float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, n.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+clusterToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	want := `fulcrum_cluster_push_failures_total{kind="` + kind + `"} `
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", sc.Text(), err)
			}
			return f
		}
	}
	t.Fatalf("%s has no %s... line", n.url+"/metrics", want)
	return 0
}

// TestClusterPushPrivateCA: instances whose admin API is served with
// certificates of a private CA: the leader's load pushes reach the
// others when its peer client trusts that CA (as instance.peer_ca makes
// it), and with the system roots alone every push fails, counted in
// fulcrum_cluster_push_failures_total{kind="loads"}.
func TestClusterPushPrivateCA(t *testing.T) {
	etcd := etcdtest.New(t, etcdtest.Options{})
	ca := certstest.NewCA(t)
	pair := ca.Leaf(t, "admin", certstest.LeafOptions{Names: []string{"127.0.0.1"}})

	run := func(t *testing.T, trusted bool) {
		c := newTestCluster(t, etcd)
		if trusted {
			c.peerClient = func(string) *http.Client {
				cl, err := certs.NewClient(certs.ClientFiles{CA: ca.CertFile, SystemRoots: true})
				if err != nil {
					t.Fatal(err)
				}
				tr := http.DefaultTransport.(*http.Transport).Clone()
				tr.DialTLSContext = cl.DialTLS((&net.Dialer{}).DialContext)
				return &http.Client{Timeout: 5 * time.Second, Transport: tr}
			}
		}
		nodes := []*clusterNode{c.start("fulcrum-a"), c.start("fulcrum-b")}
		for _, n := range nodes {
			c.serveAdminTLS(n, pair)
		}
		if _, _, err := nodes[0].b.PutGroup(protocol.Group{Name: clusterGroup, FrontDoor: "127.0.0.1:0", ReportInterval: protocol.Duration(clusterInterval)}); err != nil {
			t.Fatal(err)
		}
		lead, _ := c.leaderNode(0)
		other := nodes[0]
		if other == lead {
			other = nodes[1]
		}
		reg, _, err := other.b.Register(clusterGroup, protocol.Registration{Address: "http://127.0.0.1:9/"})
		if err != nil {
			t.Fatal(err)
		}
		const load = 7
		if !trusted {
			until(t, 5*time.Second, "failed pushes counted at the leader", func() bool {
				report(t, lead.url, reg.Token, load)
				return pushFailures(t, lead, "loads") >= 3
			})
			if pl := other.b.PickLoads(clusterGroup)[reg.ID]; pl.Reported {
				t.Fatalf("a push reached %s, whose certificate the leader cannot verify: %+v", other.name, pl)
			}
			return
		}
		until(t, 5*time.Second, "the load view pushed over TLS to "+other.name, func() bool {
			report(t, lead.url, reg.Token, load)
			pl := other.b.PickLoads(clusterGroup)[reg.ID]
			return pl.Reported && pl.Load == load
		})
		if f := pushFailures(t, lead, "loads"); f != 0 {
			t.Fatalf("the leader counts %v failed pushes, want 0: it trusts the private CA", f)
		}
	}
	t.Run("peer CA", func(t *testing.T) { run(t, true) })
	t.Run("system roots", func(t *testing.T) { run(t, false) })
}
