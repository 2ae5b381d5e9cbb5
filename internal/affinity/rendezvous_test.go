package affinity

import (
	"fmt"
	"slices"
	"testing"
)

func TestRendezvousStableWhenAReplicaLeaves(t *testing.T) {
	t.Parallel()
	ids := []string{"r1", "r2", "r3", "r4"}
	without := []string{"r1", "r2", "r4"}
	count := map[string]int{}
	moved := 0
	for i := range 2000 {
		key := fmt.Sprint("obj-", i)
		before := Pick("g", 0, key, ids)
		after := Pick("g", 0, key, without)
		count[before]++
		rank := Ranking("g", 0, key, ids)
		if rank[0] != before {
			t.Fatalf("%s: Pick %s, ranking %v", key, before, rank)
		}
		if before != "r3" {
			if after != before {
				t.Fatalf("%s moved from %s to %s when r3 left", key, before, after)
			}
			continue
		}
		moved++
		if after != rank[1] { // the next in its ranking
			t.Fatalf("%s: r3 left, went to %s, want the next in ranking %v", key, after, rank)
		}
	}
	for _, id := range ids { // about 500 each
		if count[id] < 400 || count[id] > 600 {
			t.Fatalf("spread %v, want about 500 keys each", count)
		}
	}
	if moved != count["r3"] {
		t.Fatalf("moved %d, r3 had %d", moved, count["r3"])
	}
}

func TestRendezvousSameInputsSameRanking(t *testing.T) {
	a := Ranking("g", 1, "k", []string{"a", "b", "c", "d"})
	b := Ranking("g", 1, "k", []string{"d", "c", "b", "a"}) // order of input does not matter
	if !slices.Equal(a, b) {
		t.Fatalf("rankings differ: %v %v", a, b)
	}
	differ := 0
	for i := range 50 { // the rule and the group are part of the hash
		k := fmt.Sprint(i)
		if Pick("g", 0, k, a) != Pick("g", 1, k, a) || Pick("g", 0, k, a) != Pick("h", 0, k, a) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("group and rule do not change any key's replica")
	}
	if Pick("g", 0, "k", nil) != "" {
		t.Fatal("Pick over no replicas: want \"\"")
	}
	if n := testing.AllocsPerRun(100, func() { Pick("g", 0, "k", a) }); n != 0 {
		t.Fatalf("Pick allocates %v", n)
	}
}
