package balancer_test

import (
	"log/slog"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// replicaIOR is a GIOP replica reference at host:port.
func replicaIOR(host string, port uint16) string {
	return ior.IOR{TypeID: "IDL:Prime:1.0", Profiles: []ior.Profile{ior.IIOPProfile{
		Order: cdr.BigEndian, Version: ior.V12, Host: host, Port: port, ObjectKey: []byte("\x00omniPOA\x01"),
	}}}.String()
}

// removedWarnings are the "not valid for the group's protocol" warnings
// logs holds for replica id.
func removedWarnings(logs *logCapture, id string) []logLine {
	return logs.matching(func(l logLine) bool {
		return l.attrs["replica"] == id && l.msg == "replica address is not valid for the group's protocol; replica removed"
	})
}

// TestProtocolChangeDropsInvalidReplicas: replacing an HTTP group by a GIOP
// one of the same name removes its HTTP replicas (and back: IORs leave a
// group that becomes HTTP), from the status and the store, with a warning
// naming each; replicas valid for both stay.
func TestProtocolChangeDropsInvalidReplicas(t *testing.T) {
	t.Parallel()
	logs := newLogCapture()
	e := newEnv(t, envOptions{logger: slog.New(logs)})
	e.mustPutGroup(protocol.Group{Name: "g"})
	h := e.mustRegister("g", "http://127.0.0.1:9001")

	st := e.mustPutGroup(protocol.Group{Name: "g", Protocol: protocol.ProtocolGIOP})
	if len(st.Replicas) != 0 {
		t.Fatalf("GIOP group kept the HTTP replicas: %+v", st.Replicas)
	}
	w := removedWarnings(logs, h.ID)
	if len(w) != 1 || w[0].level != slog.LevelWarn || w[0].attrs["address"] != "http://127.0.0.1:9001" || w[0].attrs["group"] != "g" || w[0].attrs["protocol"] != "giop" {
		t.Errorf("warnings for %s: %+v; want one warn naming group, address and protocol", h.ID, w)
	}
	if e.b.ReplicaTokenAllowed("g", h.ID, h.Token) {
		t.Errorf("the removed replica's token still works")
	}

	g := e.mustRegister("g", replicaIOR("127.0.0.1", 9002))
	st = e.mustPutGroup(protocol.Group{Name: "g", Protocol: protocol.ProtocolHTTP})
	if len(st.Replicas) != 0 {
		t.Fatalf("HTTP group kept the GIOP replicas: %+v", st.Replicas)
	}
	if w := removedWarnings(logs, g.ID); len(w) != 1 {
		t.Errorf("warnings for %s: %+v; want one", g.ID, w)
	}

	// Nothing of them is left in the store.
	e2 := e.reopen(envOptions{})
	if st := e2.mustGroup("g"); len(st.Replicas) != 0 {
		t.Errorf("after a restart: replicas %+v, want none", st.Replicas)
	}
}

// TestStoredReplicasCheckedAtLoad: a stored group whose replicas do not
// fit its protocol (stored by an older version) loses them at start, with a
// warning naming each, and the store forgets them.
func TestStoredReplicasCheckedAtLoad(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mustPutGroup(protocol.Group{Name: "g"})
	h := e.mustRegister("g", "http://127.0.0.1:9001")
	e.close()

	// Rewrite the stored group as GIOP behind the balancer's back.
	st, err := boltstore.Open(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := groupstore.New(st).PutGroup(protocol.Group{Name: "g", Protocol: protocol.ProtocolGIOP, FrontDoor: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	logs := newLogCapture()
	e2 := newEnv(t, envOptions{dir: e.dir, logger: slog.New(logs)})
	if st := e2.mustGroup("g"); st.Protocol != protocol.ProtocolGIOP || len(st.Replicas) != 0 {
		t.Fatalf("loaded group: protocol %s replicas %+v; want giop without replicas", st.Protocol, st.Replicas)
	}
	if w := removedWarnings(logs, h.ID); len(w) != 1 || w[0].attrs["address"] != "http://127.0.0.1:9001" {
		t.Errorf("warnings for %s: %+v; want one naming its address", h.ID, w)
	}
	e3 := e2.reopen(envOptions{})
	if st := e3.mustGroup("g"); len(st.Replicas) != 0 {
		t.Errorf("second start: replicas %+v, want none (deleted from the store)", st.Replicas)
	}
}
