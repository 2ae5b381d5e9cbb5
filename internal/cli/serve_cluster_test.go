package cli

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// On a single node (no store.etcd) GET /v1/cluster describes the one
// instance: mode single, its name, admin URL, version and its front doors
// as bound; no etcd, no other instances, no peers for the balancer.
func TestClusterSingleNode(t *testing.T) {
	t.Parallel()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cr, err := openCluster(t.Context(), config.Default(), st, config.Instance{Name: "solo", AdminURL: "http://127.0.0.1:7070"}, "v9.9.9", log)
	if err != nil {
		t.Fatal(err)
	}
	b, err := balancer.New(balancer.Options{Store: st, Logger: log, Peers: cr.peers, OnFrontDoors: cr.frontDoorsChanged})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	cr.follow(b)
	t.Cleanup(func() { closeCluster(cr, log) })
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.PutGroup(protocol.Group{Name: "prime", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest}); err != nil {
		t.Fatal(err)
	}
	c := cr.describe(t.Context())
	if c.Mode != protocol.ClusterModeSingle || c.Instance != "solo" || c.Etcd != nil || len(c.Instances) != 1 {
		t.Fatalf("describe = %+v, want a single node solo without etcd", c)
	}
	in := c.Instances[0]
	if in.Name != "solo" || !in.Self || in.AdminURL != "http://127.0.0.1:7070" || in.Version != "v9.9.9" || in.Started.IsZero() || !strings.HasPrefix(in.FrontDoors["prime"].Address, "127.0.0.1:") {
		t.Errorf("the one instance: %+v", in)
	}
	if p := cr.peers(); len(p) != 0 {
		t.Errorf("peers on a single node: %+v", p)
	}
}

func TestURLHostPort(t *testing.T) {
	t.Parallel()
	for u, want := range map[string]string{
		"http://10.0.0.2:7070":      "10.0.0.2:7070",
		"https://fulcrum-b.example": "fulcrum-b.example:443",
		"http://[fd00::2]":          "[fd00::2]:80",
		"not a url\x00":             "",
		"ftp://host":                "",
	} {
		if got := urlHostPort(u); got != want {
			t.Errorf("urlHostPort(%q) = %q, want %q", u, got, want)
		}
	}
}
