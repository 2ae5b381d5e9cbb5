package dashboard_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/etcdtest"
	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/moves"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestDashboardClusterInBrowser runs two instances in this process on a
// real etcd, each with its own etcd store, analyzer election and admin
// API on a real socket (as fulcrum serve wires them), and opens the
// dashboard on the instance that does not lead the group: the header
// names the instance the page talks to and lists both; the group shows
// its leader. When the leader stops, the page shows the surviving
// instance leading, from the leader event, without a reload.
func TestDashboardClusterInBrowser(t *testing.T) {
	needChromium(t)
	etcd := etcdtest.New(t, etcdtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := &uiCluster{t: t, etcd: etcd}
	nodes := []*uiNode{c.start("fulcrum-a"), c.start("fulcrum-b")}
	if _, _, err := nodes[0].b.PutGroup(protocol.Group{Name: "prime", FrontDoor: "127.0.0.1:0", ReportInterval: protocol.Duration(100 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	lead := c.leader(ctx, "prime")
	survivor := nodes[0]
	if lead == nodes[0] {
		survivor = nodes[1]
	}

	p := page{t, browser(ctx, t)}
	p.open(survivor.url)
	p.poll("the header names this instance in a cluster of two",
		`document.getElementById("cluster-mode").textContent === "Cluster of 2 instances; this page talks to `+survivor.name+`"`)
	p.poll("both instances listed, this one marked",
		`document.querySelectorAll("#instances li").length === 2 && document.querySelector("#instances li.self").dataset.instance === "`+survivor.name+`" && `+
			`document.querySelector('#instances li[data-instance="`+lead.name+`"]').textContent.includes("`+lead.url+`")`)
	fact := `document.querySelector('section[data-group="prime"] [data-fact="leader"] [data-leader]')`
	p.poll("the group's leader", fact+`?.dataset.leader === "`+lead.name+`" && !`+fact+`.textContent.includes("this instance")`)

	lead.stop()
	p.poll("the surviving instance leads, as the page shows", fact+`?.dataset.leader === "`+survivor.name+`" && `+fact+`.textContent.includes("(this instance), term ")`)
	p.poll("the change is logged", `Array.from(document.querySelectorAll("#log li.k-leader")).some(li => li.textContent.includes("prime: led by `+survivor.name+` (term "))`)
	p.screenshot("dashboard-cluster.png")
}

// uiCluster is the instances of a test's cluster.
type uiCluster struct {
	t    *testing.T
	etcd *etcdtest.Cluster
	mu   sync.Mutex
	live []*uiNode
}

// uiNode is one instance.
type uiNode struct {
	name, url string
	st        *etcdstore.Store
	el        *leader.Elector
	b         *balancer.Balancer
	srv       *http.Server
	served    chan struct{}
	once      sync.Once
	c         *uiCluster
}

// start runs instance name, wired as fulcrum serve wires one with
// store.etcd (internal/cli/serve_leader.go).
func (c *uiCluster) start(name string) *uiNode {
	t := c.t
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &uiNode{name: name, url: "http://" + ln.Addr().String(), served: make(chan struct{}), c: c}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n.st, err = etcdstore.Open(ctx, etcdstore.Options{Endpoints: c.etcd.Endpoints(), Prefix: "/dashboardtest/"}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	var bp atomic.Pointer[balancer.Balancer]
	n.el, err = leader.New(leader.Options{Client: n.st.Client(), Prefix: n.st.Prefix(), Instance: name, SessionTTL: 2 * time.Second, Logger: log,
		OnChange: func(ch leader.Change) {
			if b := bp.Load(); b != nil {
				b.LeadershipChanged(ch.Group)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	mv, err := moves.New(moves.Options{Client: n.st.Client(), Prefix: n.st.Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	n.b, err = balancer.New(balancer.Options{Store: n.st, Logger: log, Instance: name, SharedConfig: true, Follow: true,
		AdminURL: n.url, AdminAddr: ln.Addr().String(), Leadership: n.el, Moves: mv,
		PeerURL: c.url, PeerAdminURLs: func() []string { return c.others(name) }, PeerToken: func() string { return adminToken }})
	if err != nil {
		t.Fatal(err)
	}
	bp.Store(n.b)
	if err := n.b.Start(); err != nil {
		t.Fatal(err)
	}
	n.srv = &http.Server{Handler: api.New(n.b, api.Options{AdminToken: adminToken, Logger: log, Cluster: c.describe(name), Leaders: n.el.Leaders}),
		ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(n.served)
		_ = n.srv.Serve(ln)
	}()
	c.mu.Lock()
	c.live = append(c.live, n)
	c.mu.Unlock()
	t.Cleanup(n.stop)
	return n
}

// stop shuts the instance down as serve does: API, balancer (which
// resigns), election, store.
func (n *uiNode) stop() {
	n.once.Do(func() {
		n.c.mu.Lock()
		n.c.live = slices.DeleteFunc(n.c.live, func(o *uiNode) bool { return o == n })
		n.c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.srv.Shutdown(ctx)
		<-n.served
		_ = n.b.Shutdown(ctx)
		_ = n.el.Close(ctx)
		_ = n.st.Close()
	})
}

func (c *uiCluster) url(name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.live {
		if n.name == name {
			return n.url, true
		}
	}
	return "", false
}

func (c *uiCluster) others(self string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.live {
		if n.name != self {
			out = append(out, n.url)
		}
	}
	return out
}

// describe is GET /v1/cluster's description at instance self: the live
// instances, as serve's instance directory lists them.
func (c *uiCluster) describe(self string) func(context.Context) protocol.Cluster {
	return func(context.Context) protocol.Cluster {
		c.mu.Lock()
		defer c.mu.Unlock()
		out := protocol.Cluster{Mode: protocol.ClusterModeCluster, Instance: self}
		for _, n := range c.live {
			out.Instances = append(out.Instances, protocol.ClusterInstance{Name: n.name, AdminURL: n.url, Version: "test", Self: n.name == self})
		}
		slices.SortFunc(out.Instances, func(a, b protocol.ClusterInstance) int {
			if a.Name < b.Name {
				return -1
			}
			return 1
		})
		return out
	}
}

// leader waits until every live instance agrees on group's leader and
// returns it.
func (c *uiCluster) leader(ctx context.Context, group string) *uiNode {
	c.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c.mu.Lock()
		live := slices.Clone(c.live)
		c.mu.Unlock()
		var lead *uiNode
		agreed := true
		for _, n := range live {
			st, ok := n.el.Status(group)
			if !ok || st.Leader == "" || (lead != nil && st.Leader != lead.name) {
				agreed = false
				break
			}
			for _, m := range live {
				if m.name == st.Leader {
					lead = m
				}
			}
			if lead == nil {
				agreed = false
				break
			}
		}
		if agreed && lead != nil {
			return lead
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("no leader of %s agreed on by every instance", group)
		case <-tick.C:
		}
	}
}
