package frontdoor

import (
	"context"
	"errors"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/strategy"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestPickRebind(t *testing.T) {
	t.Parallel()
	s := snapshot(3, 0) // a, b, c; the picker chooses a
	s.Members["c"].State = protocol.StateDraining
	s.Planned = map[string]*Member{"planned": s.Members["b"]}
	var asked []string
	s.LookupMove = func(_ context.Context, client string) (string, bool) {
		asked = append(asked, client)
		id, ok := map[string]string{"mover": "b", "planned": "c", "to-draining": "c", "to-unknown": "z"}[client]
		return id, ok
	}
	for _, tc := range []struct {
		client, want string
		looked       bool
		asked        bool
	}{
		{"mover", "b", true, true},
		{"planned", "b", false, false}, // Planned wins, without a lookup
		{"to-draining", "a", false, true},
		{"to-unknown", "a", false, true},
		{"nobody", "a", false, true},
		{"", "a", false, false}, // no client id: nothing to look up
	} {
		asked = nil
		m, looked, err := s.PickRebind(context.Background(), &strategy.Request{Client: tc.client})
		if err != nil || m.ID() != tc.want || looked != tc.looked {
			t.Fatalf("PickRebind(%q) = %s, %v, %v; want %s, looked %v", tc.client, idOf(m), looked, err, tc.want, tc.looked)
		}
		if got := len(asked) == 1 && asked[0] == tc.client; got != tc.asked {
			t.Errorf("PickRebind(%q) asked %v, want a lookup: %v", tc.client, asked, tc.asked)
		}
	}
	s.LookupMove = nil
	if m, looked, err := s.PickRebind(context.Background(), &strategy.Request{Client: "mover"}); err != nil || m.ID() != "a" || looked {
		t.Fatalf("PickRebind without LookupMove = %s, %v, %v; want the picker's a", idOf(m), looked, err)
	}
	s.Picker = none{}
	s.LookupMove = func(context.Context, string) (string, bool) { return "", false }
	if _, _, err := s.PickRebind(context.Background(), &strategy.Request{Client: "mover"}); !errors.Is(err, ErrNoReplica) {
		t.Errorf("PickRebind with nothing to pick = %v, want ErrNoReplica", err)
	}
}

// idOf is m's replica id, or "<nil>".
func idOf(m *Member) string {
	if m == nil {
		return "<nil>"
	}
	return m.ID()
}
