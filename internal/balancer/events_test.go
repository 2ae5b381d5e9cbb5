package balancer_test

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/memnet"
	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestSubscribe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testSubscribe)
}

func testSubscribe(t *testing.T) {
	n := memnet.New()
	e := newEnv(t, envOptions{net: n})
	e.mustPutGroup(protocol.Group{Name: "ev", ReportInterval: ms(20)})
	ch, cancel, err := e.b.Subscribe("ev")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()

	reg := e.mustRegister("ev", "http://127.0.0.1:9001")
	waitEvent(t, ch, 5*time.Second, membership(stateIs(reg.ID, protocol.StateActive)))
	step := waitEvent(t, ch, 5*time.Second, stepAfter(time.Time{}, func(r map[string]stepReplica) error {
		if _, ok := r[reg.ID]; !ok {
			return fmt.Errorf("step without %s", reg.ID)
		}
		return nil
	}))
	if step.Group != "ev" || step.Time.IsZero() {
		t.Errorf("step event %+v, want group ev and a time", step)
	}

	rr := strategy.RoundRobinName
	if _, err := e.b.PatchGroup("ev", protocol.GroupPatch{Strategy: &rr}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, 5*time.Second, func(ev balancer.Event) error {
		if ev.Type != "config" {
			return fmt.Errorf("%s event, want config", ev.Type)
		}
		if d, ok := ev.Data.(map[string]any); !ok || d["strategy"] != rr {
			return fmt.Errorf("config event data %v, want strategy %s", ev.Data, rr)
		}
		return nil
	})

	cancel()
	waitClosed(t, ch, 5*time.Second)
	cancel() // a second cancel is harmless

	if _, _, err := e.b.Subscribe("nope"); !errors.Is(err, balancer.ErrUnknownGroup) {
		t.Errorf("Subscribe(nope) = %v, want ErrUnknownGroup", err)
	}
}

// TestSubscribersClosed: deleting a group, or shutting the balancer down,
// closes its subscribers' channels; their cancel funcs stay harmless.
// In a synctest bubble (bubble_test.go).
func TestSubscribersClosed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testSubscribersClosed)
}

func testSubscribersClosed(t *testing.T) {
	n := memnet.New()
	e := newEnv(t, envOptions{net: n})
	e.mustPutGroup(protocol.Group{Name: "one", ReportInterval: ms(20)})
	e.mustPutGroup(protocol.Group{Name: "two", ReportInterval: ms(20)})
	one1, cancel1, err := e.b.Subscribe("one")
	if err != nil {
		t.Fatal(err)
	}
	one2, cancel2, err := e.b.Subscribe("one")
	if err != nil {
		t.Fatal(err)
	}
	two, cancel3, err := e.b.Subscribe("two")
	if err != nil {
		t.Fatal(err)
	}

	if err := e.b.DeleteGroup("one"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, one1, 5*time.Second)
	waitClosed(t, one2, 5*time.Second)
	cancel1()
	cancel2()
	// The other group's stream goes on.
	waitEvent(t, two, 5*time.Second, stepAfter(time.Time{}, func(map[string]stepReplica) error { return nil }))

	e.close()
	waitClosed(t, two, 5*time.Second)
	cancel3()
}
