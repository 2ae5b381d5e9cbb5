package bench_test

import (
	"slices"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/albl"
	"github.com/fulcrum-lb/fulcrum/internal/bench/effectiveness"
	"github.com/fulcrum-lb/fulcrum/internal/bench/overhead"
	"github.com/fulcrum-lb/fulcrum/internal/bench/remoting"
	_ "github.com/fulcrum-lb/fulcrum/internal/bench/scalability"
)

func TestRegistry(t *testing.T) {
	t.Parallel()
	names := bench.Names()
	for _, want := range []string{"overhead", "scalability"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not registered: %v", want, names)
		}
	}
	if names[0] != "overhead" {
		t.Errorf("order %v, want overhead first", names)
	}
	a, _ := bench.New("overhead")
	b, _ := bench.New("overhead")
	if a == b {
		t.Error("bench.New returns the same value twice")
	}
	defer func() {
		if recover() == nil {
			t.Error("registering overhead twice did not panic")
		}
	}()
	bench.Register("overhead", func() bench.Experiment { return &overhead.Overhead{} })
}

// TestAllNamesLeavesTestbedOut: "bench all" runs the loopback experiments
// (within the 15 minutes at --quick); the testbed ones (root, 17
// minutes at --quick) only with --testbed.
func TestAllNamesLeavesTestbedOut(t *testing.T) {
	t.Parallel()
	want := []string{"overhead", "effectiveness", "scalability"}
	if got := bench.AllNames(false); !slices.Equal(got, want) {
		t.Errorf("bench.AllNames(false) = %v, want %v", got, want)
	}
	got := bench.AllNames(true)
	if len(got) != len(bench.Names()) || !slices.Contains(got, albl.ALBLName) || !slices.Contains(got, remoting.RemotingName) {
		t.Errorf("bench.AllNames(true) = %v, want every experiment %v", got, bench.Names())
	}
}

// Overhead and effectiveness run over GIOP; scalability does not.
func TestGIOPNames(t *testing.T) {
	t.Parallel()
	if !bench.RunsOverGIOP("overhead") || !bench.RunsOverGIOP(effectiveness.EffectivenessName) || bench.RunsOverGIOP("scalability") {
		t.Error("bench.RunsOverGIOP")
	}
	if got := bench.GIOPNames(); !slices.Equal(got, []string{"overhead", effectiveness.EffectivenessName}) {
		t.Errorf("GIOPNames = %v, want overhead, effectiveness", got)
	}
}
