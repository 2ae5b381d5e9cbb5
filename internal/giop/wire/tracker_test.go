package wire_test

import (
	"errors"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/wire"
)

func fragHeader(v giop.Version, more bool) giop.Header {
	return giop.Header{Version: v, Type: giop.MsgFragment, MoreFragments: more}
}

// A Tracker follows fragmented messages passed through: GIOP 1.2 ones
// interleave by request id, a GIOP 1.1 one admits nothing but its
// fragments, and a cancelled one is forgotten.
func TestTracker(t *testing.T) {
	t.Parallel()
	var tr wire.Tracker[string]
	a, err := tr.Open(giop.V12, 1)
	if err != nil {
		t.Fatal(err)
	}
	a.Data = "a"
	if _, err := tr.Open(giop.V12, 2); err != nil {
		t.Fatal(err)
	}
	if m, last, err := tr.Next(fragHeader(giop.V12, true), 1); err != nil || last || m.Data != "a" {
		t.Fatalf("Next(1, more) = %+v, %v, %v", m, last, err)
	}
	if m, last, err := tr.Next(fragHeader(giop.V12, false), 1); err != nil || !last || m.ID != 1 {
		t.Fatalf("Next(1, last) = %+v, %v, %v", m, last, err)
	}
	if tr.Len() != 1 {
		t.Errorf("%d open after the last fragment of one of two", tr.Len())
	}
	if m := tr.Cancel(2); m == nil || m.ID != 2 || tr.Len() != 0 {
		t.Errorf("Cancel(2) = %+v with %d open", m, tr.Len())
	}
	if m := tr.Cancel(2); m != nil {
		t.Errorf("Cancel of nothing = %+v", m)
	}

	if _, err := tr.Open(giop.V11, 7); err != nil {
		t.Fatal(err)
	}
	if v := tr.V11(); v == nil || v.ID != 7 {
		t.Fatalf("V11() = %+v", v)
	}
	if m, last, err := tr.Next(fragHeader(giop.V11, false), 0); err != nil || !last || m.ID != 7 || tr.V11() != nil {
		t.Fatalf("the last GIOP 1.1 fragment: %+v, %v, %v", m, last, err)
	}
}

func TestTrackerMisuse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		run  func(tr *wire.Tracker[int]) error
	}{
		{"GIOP 1.1 started twice", func(tr *wire.Tracker[int]) error {
			_, _ = tr.Open(giop.V11, 1)
			_, err := tr.Open(giop.V11, 2)
			return err
		}},
		{"request id open twice", func(tr *wire.Tracker[int]) error {
			_, _ = tr.Open(giop.V12, 1)
			_, err := tr.Open(giop.V12, 1)
			return err
		}},
		{"too many open", func(tr *wire.Tracker[int]) error {
			tr.MaxOpen = 2
			_, _ = tr.Open(giop.V12, 1)
			_, _ = tr.Open(giop.V12, 2)
			_, err := tr.Open(giop.V12, 3)
			return err
		}},
		{"GIOP 1.1 fragment of nothing", func(tr *wire.Tracker[int]) error {
			_, _, err := tr.Next(fragHeader(giop.V11, false), 0)
			return err
		}},
		{"GIOP 1.2 fragment of nothing", func(tr *wire.Tracker[int]) error {
			_, _, err := tr.Next(fragHeader(giop.V12, false), 4)
			return err
		}},
		{"GIOP 1.2 fragment inside 1.1", func(tr *wire.Tracker[int]) error {
			_, _ = tr.Open(giop.V12, 4)
			_, _ = tr.Open(giop.V11, 5)
			_, _, err := tr.Next(fragHeader(giop.V12, false), 4)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if err := c.run(new(wire.Tracker[int])); !errors.Is(err, wire.ErrFragment) || !wire.IsProtocolError(err) {
				t.Errorf("%v, want a protocol error wrapping ErrFragment", err)
			}
		})
	}
}
