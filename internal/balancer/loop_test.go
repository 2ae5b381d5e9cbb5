package balancer_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestApplyConfigRefusesLoops: config groups are checked against what the
// config package cannot know: the machine's interface addresses (here a
// fake one) and the admin API's bound address. The error names the group,
// the replica field and what listens there.
func TestApplyConfigRefusesLoops(t *testing.T) {
	t.Parallel()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := balancer.New(balancer.Options{
		Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AdminAddr: "0.0.0.0:7070",
		Local:     func() registry.Local { return registry.Local{Addrs: []netip.Addr{netip.MustParseAddr("10.1.2.3")}} },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	}()
	ok := protocol.Group{Name: "ok", FrontDoor: "127.0.0.1:0", Replicas: []protocol.StaticReplica{{Address: "http://10.1.2.4:7070"}}}
	bad := protocol.Group{Name: "web", FrontDoor: "127.0.0.1:0", Replicas: []protocol.StaticReplica{
		{Address: "http://10.9.9.9:7070"}, {Address: "http://10.1.2.3:7070"},
	}}
	err = b.ApplyConfig([]protocol.Group{ok, bad})
	var le *balancer.LoopError
	if !errors.As(err, &le) || le.Field != "replicas[1].address" || le.Target.Name != "admin API" {
		t.Fatalf("ApplyConfig = %v, want a LoopError for replicas[1].address at the admin API", err)
	}
	for _, want := range []string{"group web", "replicas[1].address", "http://10.1.2.3:7070", "admin API", "0.0.0.0:7070"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := b.Group("web"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("group web exists after the refusal: %v", err)
	}
}

// TestStartDropsLoopingReplicas: a replica stored before such addresses
// were refused, whose address leads to one of the balancer's listeners as
// bound at the next start, is removed at Start; the others stay.
func TestStartDropsLoopingReplicas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	run := func(adminAddr string, do func(b *balancer.Balancer)) {
		t.Helper()
		st, err := boltstore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		b, err := balancer.New(balancer.Options{Store: st, Logger: log, AdminAddr: adminAddr})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		do(b)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var keep, drop string
	run("", func(b *balancer.Balancer) {
		if _, _, err := b.PutGroup(protocol.Group{Name: "g", FrontDoor: "127.0.0.1:0"}); err != nil {
			t.Fatal(err)
		}
		for _, addr := range []string{"http://127.0.0.1:9001", "http://localhost:7999"} {
			r, _, err := b.Register("g", protocol.Registration{Address: addr})
			if err != nil {
				t.Fatalf("register %s without an admin address to check: %v", addr, err)
			}
			if addr == "http://127.0.0.1:9001" {
				keep = r.ID
			} else {
				drop = r.ID
			}
		}
	})
	run("127.0.0.1:7999", func(b *balancer.Balancer) {
		st, err := b.Group("g")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range st.Replicas {
			ids = append(ids, r.ID)
		}
		if len(ids) != 1 || ids[0] != keep {
			t.Fatalf("replicas after restart %v, want only %s (%s leads to the admin API)", ids, keep, drop)
		}
	})
}
