package balancer_test

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// peerList is a settable Options.Peers.
type peerList struct {
	mu    sync.Mutex
	peers []balancer.Peer
}

func (p *peerList) set(ps ...balancer.Peer) {
	p.mu.Lock()
	p.peers = ps
	p.mu.Unlock()
}

func (p *peerList) get() []balancer.Peer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peers
}

// A replica address at another instance's listener — its bound front door
// (a real one, of another balancer) or its admin API — is refused, naming
// the instance; an address elsewhere is not.
func TestLoopGuardRefusesOtherInstancesListeners(t *testing.T) {
	t.Parallel()
	other := newEnv(t, envOptions{})
	door := other.mustPutGroup(protocol.Group{Name: "theirs", FrontDoor: "127.0.0.2:0", Binding: protocol.PerRequest}).Listening
	if !strings.HasPrefix(door, "127.0.0.2:") {
		t.Fatalf("other instance's front door listens on %q, want 127.0.0.2", door)
	}
	peers := &peerList{}
	peers.set(balancer.Peer{Name: "fulcrum-b", AdminAddr: "127.0.0.2:7070", FrontDoors: map[string]string{"theirs": door}})
	e := newEnv(t, envOptions{peers: peers.get})
	e.mustPutGroup(protocol.Group{Name: "ours", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest})

	for _, tt := range []struct{ addr, target string }{
		{"http://" + door, `front door of group "theirs"`},
		{"http://127.0.0.2:7070/", "admin API"},
	} {
		_, _, err := e.b.Register("ours", protocol.Registration{Address: tt.addr})
		var le *balancer.LoopError
		if !errors.As(err, &le) || le.Instance != "fulcrum-b" || le.Target.Name != tt.target {
			t.Fatalf("Register(%s) = %v, want a LoopError naming instance fulcrum-b's %s", tt.addr, err, tt.target)
		}
		for _, want := range []string{tt.addr, `instance "fulcrum-b"`, tt.target} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	}
	// A static replica there too.
	_, _, err := e.b.PutGroup(protocol.Group{Name: "static", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest, Replicas: []protocol.StaticReplica{{Address: "http://" + door}}})
	var le *balancer.LoopError
	if !errors.As(err, &le) || le.Field != "replicas[0].address" || le.Instance != "fulcrum-b" {
		t.Errorf("PutGroup with a static replica at another instance's front door = %v, want a LoopError", err)
	}
	// Another port of that host is a replica like any other.
	if _, _, err := e.b.Register("ours", protocol.Registration{Address: "http://127.0.0.2:7071"}); err != nil {
		t.Errorf("Register at a port no instance listens on: %v", err)
	}
	// Once the instance is gone, its addresses are no longer refused.
	peers.set()
	if _, _, err := e.b.Register("ours", protocol.Registration{Address: "http://127.0.0.2:7070"}); err != nil {
		t.Errorf("Register at a gone instance's admin address: %v", err)
	}
}

// A GIOP group whose advertise derives from its front door has an IOR of
// one IIOP 1.2 profile: this instance's front door first, then each other
// live instance's bound front door of the group as an alternate address,
// as the instances change; an explicit advertise is kept as it is.
func TestGIOPReferenceListsOtherInstances(t *testing.T) {
	t.Parallel()
	peers := &peerList{}
	e := newEnv(t, envOptions{peers: peers.get})
	st := e.mustPutGroup(protocol.Group{Name: "g", Protocol: protocol.ProtocolGIOP, Binding: protocol.PerRequest, FrontDoor: "127.0.0.1:0"})
	own := st.Listening
	endpoints := func(name string) []string {
		t.Helper()
		st := e.mustGroup(name)
		ref, err := ior.Parse(st.Reference.IOR)
		if err != nil {
			t.Fatalf("IOR of %s %q: %v", name, st.Reference.IOR, err)
		}
		if len(ref.Profiles) != 1 {
			t.Fatalf("IOR of %s has %d profiles, want 1", name, len(ref.Profiles))
		}
		var out []string
		for i, ep := range ref.Endpoints() {
			if ep.Alternate != (i > 0) {
				t.Errorf("endpoint %d of %s: alternate %v", i, name, ep.Alternate)
			}
			out = append(out, ep.Address.HostPort())
		}
		return out
	}
	if got := endpoints("g"); strings.Join(got, " ") != own {
		t.Errorf("IOR alone lists %v, want %s", got, own)
	}
	peers.set(
		balancer.Peer{Name: "b", FrontDoors: map[string]string{"g": "127.0.0.2:2809", "other": "127.0.0.2:2810"}},
		balancer.Peer{Name: "c", FrontDoors: map[string]string{"other": "127.0.0.3:2810"}},
		balancer.Peer{Name: "d", FrontDoors: map[string]string{"g": "127.0.0.4:2811"}},
	)
	if got, want := strings.Join(endpoints("g"), " "), own+" 127.0.0.2:2809 127.0.0.4:2811"; got != want {
		t.Errorf("IOR with instances b, c, d lists %s, want %s", got, want)
	}
	peers.set(balancer.Peer{Name: "d", FrontDoors: map[string]string{"g": "127.0.0.4:2811"}})
	if got, want := strings.Join(endpoints("g"), " "), own+" 127.0.0.4:2811"; got != want {
		t.Errorf("IOR once b is gone lists %s, want %s", got, want)
	}

	e.mustPutGroup(protocol.Group{Name: "explicit", Protocol: protocol.ProtocolGIOP, Binding: protocol.PerRequest, FrontDoor: "127.0.0.1:0", Advertise: "corbaloc:iiop:1.2@vip.example:2809"})
	peers.set(balancer.Peer{Name: "b", FrontDoors: map[string]string{"explicit": "127.0.0.2:2809"}})
	if got := e.mustGroup("explicit").Reference.IOR; got == "" {
		t.Fatal("no IOR for the group with an explicit advertise")
	} else if ref, err := ior.Parse(got); err != nil || len(ref.Endpoints()) != 1 || ref.Endpoints()[0].Address.HostPort() != "vip.example:2809" {
		t.Errorf("IOR of a group with an explicit advertise: %v %v, want vip.example:2809 only", ref, err)
	}
}

// With a shared store, a group a config file declares listens on that
// file's front_door on each instance (the stored group keeps the first
// one's), with no warning of a difference; a group created through the
// API binds its stored front_door everywhere; FrontDoors and
// OnFrontDoors report the bound addresses.
func TestPerInstanceFrontDoors(t *testing.T) {
	t.Parallel()
	decl := func(door string) []protocol.Group {
		return []protocol.Group{{Name: "decl", FrontDoor: door, Binding: protocol.PerRequest, Strategy: strategy.RoundRobinName}}
	}
	a := newEnv(t, envOptions{shared: true, follow: true, config: decl("127.0.0.1:0")})
	logs, log := newLog()
	changed := make(chan struct{}, 1)
	b := newEnv(t, envOptions{shared: true, follow: true, store: a.st, logger: log, config: decl("127.0.0.2:0"), onFrontDoors: func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	atA, atB := a.b.FrontDoors()["decl"], b.b.FrontDoors()["decl"]
	if !strings.HasPrefix(atA.Address, "127.0.0.1:") || !strings.HasPrefix(atB.Address, "127.0.0.2:") {
		t.Fatalf("decl bound at A %+v, at B %+v; want 127.0.0.1 and 127.0.0.2 (each file's)", atA, atB)
	}
	if got := b.mustGroup("decl"); got.FrontDoor != "127.0.0.1:0" || got.Listening != atB.Address || !strings.Contains(got.Advertise, atB.Address) {
		t.Errorf("decl at B: front_door %q listening %q advertise %q; want the stored 127.0.0.1:0, listening and advertised at %s", got.FrontDoor, got.Listening, got.Advertise, atB.Address)
	}
	if w := logs.records(t, differs); len(w) != 0 {
		t.Errorf("a declared group differing only in its front door warns: %v", w)
	}
	select {
	case <-changed:
	default:
		t.Error("OnFrontDoors not called when B's front door started")
	}
	// Calls through B's front door are served (the replica registered at A).
	rep := newReplica(t, named("r1"))
	a.mustRegister("decl", rep.URL)
	eventually(t, followWait, func() error {
		if s, err := replicaState(b.b, "decl", replicaIDs(a.mustGroup("decl"))[0]); err != nil || s != protocol.StateActive {
			return errors.New("replica not active at B yet")
		}
		return nil
	})
	if got := get(t, httpClient(t), "http://"+atB.Address+"/").body; got != "r1" {
		t.Errorf("call through B's own front door served by %q, want r1", got)
	}

	// A group created through the API binds its stored front_door at B.
	a.mustPutGroup(protocol.Group{Name: "api", FrontDoor: "127.0.0.1:0", Binding: protocol.PerRequest})
	eventually(t, followWait, func() error {
		fd, ok := b.b.FrontDoors()["api"]
		if !ok || !strings.HasPrefix(fd.Address, "127.0.0.1:") {
			return errors.New("api group not bound at B on 127.0.0.1")
		}
		return nil
	})

	// A reload that declares another front door moves B's.
	if _, err := b.b.Reload(decl("127.0.0.3:0")); err != nil {
		t.Fatal(err)
	}
	if fd := b.b.FrontDoors()["decl"]; !strings.HasPrefix(fd.Address, "127.0.0.3:") {
		t.Errorf("decl at B after a reload declaring 127.0.0.3:0: %+v", fd)
	}
	if got := a.mustGroup("decl").FrontDoor; got != "127.0.0.1:0" {
		t.Errorf("stored front_door after B's reload: %q, want 127.0.0.1:0 (as created)", got)
	}
}

// With a shared store, a stored group this instance's file does not
// declare, whose front door cannot listen here (another instance on the
// host holds its address), does not stop the start: the group is kept,
// the instance not ready, and FrontDoors says why.
func TestStoredGroupThatCannotListenIsKept(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := ln.Addr().String()
	ln.Close()
	a := newEnv(t, envOptions{shared: true, follow: true})
	a.mustPutGroup(protocol.Group{Name: "fixed", FrontDoor: held, Binding: protocol.PerRequest})
	changed := make(chan struct{}, 1)
	b := newEnv(t, envOptions{shared: true, follow: true, store: a.st, config: []protocol.Group{}, onFrontDoors: func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	fd := b.b.FrontDoors()["fixed"]
	if fd.Address != "" || !strings.Contains(fd.Error, held) {
		t.Errorf("fixed at B: %+v, want the bind error naming %s", fd, held)
	}
	if b.b.Ready() {
		t.Error("B ready with a front door that cannot listen")
	}
	if _, err := b.b.Group("fixed"); err != nil {
		t.Errorf("fixed group not kept at B: %v", err)
	}

	// Deleted (at A): its error leaves B's front doors, and B says so.
	select {
	case <-changed:
	default:
		t.Error("OnFrontDoors not called when B's front door failed to listen")
	}
	if err := a.b.DeleteGroup("fixed"); err != nil {
		t.Fatal(err)
	}
	recv(t, changed, followWait, "OnFrontDoors after the group that could not listen was deleted")
	if fd, ok := b.b.FrontDoors()["fixed"]; ok {
		t.Errorf("deleted group still in B's front doors: %+v", fd)
	}
}
