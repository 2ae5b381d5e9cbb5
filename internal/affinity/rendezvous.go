package affinity

import (
	"slices"
	"strconv"
)

// Rendezvous (highest random weight) hashing: a key's replica is the live
// replica with the highest score(group, rule, key, id), and the replicas
// in falling score order are the key's failover ranking. When a replica
// leaves, only the keys it ranked first move (each to its next in
// ranking); every instance computes the same order from the same inputs.

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// keyHash is the hash of (group, rule, key) that each replica's score
// continues from.
func keyHash(group string, rule int, key string) uint64 {
	h := fnvString(fnvOffset, group)
	h = fnvString(h^0xff, strconv.Itoa(rule))
	h = fnvString(h^0xff, key)
	return h ^ 0xff
}

// score is replica id's rendezvous score for the key hashed to kh: FNV-1a
// continued over id, then mixed (SplitMix64's finaliser) so that nearby
// ids score independently.
func score(kh uint64, id string) uint64 {
	z := fnvString(kh, id)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Pick returns the replica of ids that key ranks first (the highest
// score; ties by id), or "" when ids is empty. Pick does not allocate.
func Pick(group string, rule int, key string, ids []string) string {
	kh := keyHash(group, rule, key)
	best, bestScore := "", uint64(0)
	for _, id := range ids {
		s := score(kh, id)
		if best == "" || s > bestScore || (s == bestScore && id < best) {
			best, bestScore = id, s
		}
	}
	return best
}

// Ranking returns ids in key's failover order (the rendezvous order:
// falling score, ties by id). The result is a new slice.
func Ranking(group string, rule int, key string, ids []string) []string {
	kh := keyHash(group, rule, key)
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int {
		sa, sb := score(kh, a), score(kh, b)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return cmpString(a, b)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
