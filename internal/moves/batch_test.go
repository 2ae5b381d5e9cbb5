package moves

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestChunks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n, size int
		want    []int
	}{
		{0, 128, nil},
		{1, 128, []int{1}},
		{128, 128, []int{128}},
		{129, 128, []int{128, 1}},
		{300, 128, []int{128, 128, 44}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			t.Parallel()
			s := make([]int, tt.n)
			for i := range s {
				s[i] = i
			}
			var sizes []int
			var all []int
			for _, c := range chunks(s, tt.size) {
				sizes = append(sizes, len(c))
				all = append(all, c...)
				if cap(c) > tt.size {
					t.Fatalf("chunk cap %d > %d: an append would write into the next", cap(c), tt.size)
				}
			}
			if !slices.Equal(sizes, tt.want) || !slices.Equal(all, s) {
				t.Fatalf("chunks(%d, %d) sizes %v, want %v (in order: %v)", tt.n, tt.size, sizes, tt.want, slices.Equal(all, s))
			}
		})
	}
}

func TestLeaseTTL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		life, want time.Duration
	}{
		{100 * time.Millisecond, MinLeaseTTL},
		{time.Second, 2 * time.Second},
		{2 * time.Second, 4 * time.Second},
		{2100 * time.Millisecond, 5 * time.Second},
		{time.Hour, 2 * time.Hour},
	}
	for _, tt := range tests {
		if got := leaseTTL(tt.life); got != tt.want {
			t.Errorf("leaseTTL(%v) = %v, want %v", tt.life, got, tt.want)
		}
	}
}

func TestCheckMoves(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		group string
		life  time.Duration
		moves []Move
		want  string
	}{
		{"no group", "", time.Second, nil, "moves: group: empty"},
		{"no life", "g", 0, nil, `life 0s: must be positive`},
		{"empty client", "g", time.Second, []Move{{Client: "", To: "r"}}, "moves[0].client: empty"},
		{"empty target", "g", time.Second, []Move{{Client: "a", To: "r"}, {Client: "b"}}, `moves[1].to: empty, want a replica id (client "b")`},
		{"client twice", "g", time.Second, []Move{{Client: "a", To: "r"}, {Client: "a", To: "s"}}, `moves[1].client "a": already moves[0]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := checkMoves(tt.group, tt.life, tt.moves)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("checkMoves = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if err := checkMoves("g", time.Second, []Move{{Client: "a", To: "r"}, {Client: "b", To: "r"}}); err != nil {
		t.Fatalf("checkMoves of a good batch: %v", err)
	}
}

func clients(ms []Move) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Client+">"+m.To)
	}
	return out
}

// TestLedger: a step that hands over the same moves writes nothing; a new
// target, a new term or an ended lease writes again; clients no longer
// planned are forgotten.
func TestLedger(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := t0.Add(4 * time.Second)
	l := ledger{}
	ab := []Move{{Client: "a", To: "r1"}, {Client: "b", To: "r2"}}
	steps := []struct {
		name  string
		term  int64
		moves []Move
		now   time.Time
		want  []string
	}{
		{"first", 5, ab, t0, []string{"a>r1", "b>r2"}},
		{"same again", 5, ab, t0.Add(time.Second), nil},
		{"one new", 5, append(slices.Clone(ab), Move{Client: "c", To: "r1"}), t0.Add(time.Second), []string{"c>r1"}},
		{"retargeted", 5, []Move{{Client: "a", To: "r3"}, {Client: "b", To: "r2"}, {Client: "c", To: "r1"}}, t0.Add(time.Second), []string{"a>r3"}},
		{"new term", 6, []Move{{Client: "b", To: "r2"}}, t0.Add(time.Second), []string{"b>r2"}},
		{"lease ended", 6, []Move{{Client: "b", To: "r2"}}, end, []string{"b>r2"}},
	}
	for _, st := range steps {
		due := l.due("g", st.term, st.moves, st.now)
		if got := clients(due); !slices.Equal(got, st.want) {
			t.Fatalf("%s: due = %v, want %v", st.name, got, st.want)
		}
		l.record("g", st.term, due, end)
	}
	// "new term" handed over b alone: a and c were forgotten, so they are
	// due again when planned again.
	if got := clients(l.due("g", 6, []Move{{Client: "a", To: "r3"}}, t0)); !slices.Equal(got, []string{"a>r3"}) {
		t.Fatalf("after a was dropped from the plan: due = %v, want [a>r3]", got)
	}
	l.record("g", 6, []Move{{Client: "a", To: "r3"}}, end)
	l.forget("g", "a")
	if got := clients(l.due("g", 6, []Move{{Client: "a", To: "r3"}}, t0)); !slices.Equal(got, []string{"a>r3"}) {
		t.Fatalf("after forget: due = %v, want [a>r3]", got)
	}
	l.due("g", 6, nil, t0)
	if len(l) != 0 {
		t.Fatalf("an empty plan leaves %v in the ledger, want nothing", l)
	}
}
