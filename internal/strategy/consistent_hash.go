package strategy

import (
	"slices"
	"strings"
	"sync/atomic"
)

// ConsistentHashName is the registered name of the consistent-hash
// strategy.
const ConsistentHashName = "consistent-hash"

// Consistent hashing methods.
const (
	HashMaglev = "maglev"
	HashRing   = "ring"
)

// ConsistentHashConfig is consistent-hash's configuration.
type ConsistentHashConfig struct {
	// Key is where a request's affinity key comes from: "header:NAME" (a
	// request header), "cookie:NAME" (a cookie) or "client-address" (the
	// client's IP address). Default "client-address".
	Key string `json:"key"`
	// Method is the hashing scheme: "maglev" (Maglev lookup table) or
	// "ring" (ketama-style ring). Default "maglev".
	Method string `json:"method"`
	// TableSize is the Maglev table size M, a prime in [7,4194304]; the
	// shares are even to within about N/M, so M should be at least 100
	// times the replicas. Default 65537. Maglev only.
	TableSize int `json:"table_size"`
	// VNodes is the number of points a replica of mean weight has on the
	// ring, to within a factor of two; others have points in proportion to
	// their weight. Default 160, range [1,1000]. Ring only.
	VNodes int `json:"vnodes"`
}

var defaultConsistentHashConfig = ConsistentHashConfig{
	Key:       "client-address",
	Method:    HashMaglev,
	TableSize: 65537,
	VNodes:    160,
}

const maxMaglevTableSize = 1 << 22

// consistentHash maps a request key to a replica so that the same key keeps
// going to the same replica, and a replica joining or leaving moves only
// about its share of the keys (IPVS sh/dh/mh; the ALBL paper §3 "source hashing").
//
// With method maglev the key's hash h(k) indexes a lookup table of M slots
// filled by Maglev's population algorithm (Eisenbud et al., "Maglev: A Fast
// and Reliable Software Network Load Balancer", NSDI 2016, §3.4): replica
// i's preference list is offset_i + j·skip_i mod M, and replicas take
// turns claiming their next free preferred slot, each turn worth W_i/W_max
// of a slot so that shares follow the weights. With method ring each
// replica has vnodes·W_i/u points on a 64-bit ring and a key goes to
// the first point at or after h(k) (Karger et al. 1997; libketama),
// u the mean weight rounded down to a power of two.
//
// Hashes are FNV-1a 64 with MurmurHash3's fmix64 finaliser: stable across
// processes, so balancers sharing a group agree. A request without a key
// goes to a random slot or ring point, which respects the weights. Tables
// depend only on the replicas' ids and weights, not on their order in the
// snapshot; the last one built is kept and reused while they do not change.
type consistentHash struct {
	cfg ConsistentHashConfig
	key KeySpec
	env Env
	// last is the most recently built table.
	last atomic.Pointer[hashTable]
}

var _ Keyed = (*consistentHash)(nil)

func init() {
	Register(Definition{
		Name:     ConsistentHashName,
		Summary:  "the same key to the same replica: Maglev table or hash ring on a header, cookie or the client address",
		Build:    buildConsistentHash,
		Defaults: func() map[string]any { return ToParams(defaultConsistentHashConfig) },
	})
}

func buildConsistentHash(params map[string]any, env Env) (Strategy, error) {
	cfg := defaultConsistentHashConfig
	if err := DecodeParams(ConsistentHashName, params, &cfg); err != nil {
		return nil, err
	}
	key, ok := parseHashKey(cfg.Key)
	if !ok {
		return nil, &ParamError{Strategy: ConsistentHashName, Field: "key", Value: cfg.Key,
			Allowed: `must be "header:NAME", "cookie:NAME" or "client-address", NAME an HTTP token`}
	}
	switch cfg.Method {
	case HashMaglev, HashRing:
	default:
		return nil, &ParamError{Strategy: ConsistentHashName, Field: "method", Value: cfg.Method,
			Allowed: `must be one of: maglev, ring`}
	}
	if cfg.TableSize < 7 || cfg.TableSize > maxMaglevTableSize || !isPrime(cfg.TableSize) {
		return nil, &ParamError{Strategy: ConsistentHashName, Field: "table_size", Value: cfg.TableSize,
			Allowed: "must be a prime in [7,4194304], such as 65537"}
	}
	if err := intParamIn(ConsistentHashName, "vnodes", cfg.VNodes, 1, 1000); err != nil {
		return nil, err
	}
	return &consistentHash{cfg: cfg, key: key, env: env.withDefaults()}, nil
}

func (*consistentHash) Name() string { return ConsistentHashName }

// KeySpec tells the front door which key to hash.
func (s *consistentHash) KeySpec() KeySpec { return s.key }

func (s *consistentHash) Picker(replicas []*Replica) Picker {
	if len(replicas) == 0 {
		return noReplicas{}
	}
	// Tables are built over the replicas sorted by id, so that the mapping
	// depends on the membership only, not on the snapshot's order.
	members := slices.SortedFunc(slices.Values(replicas), func(a, b *Replica) int { return strings.Compare(a.ID, b.ID) })
	t := s.last.Load()
	if t == nil || !t.builtFor(members) {
		t = newHashTable(members, s.cfg)
		s.last.Store(t)
	}
	return &consistentHashPicker{members: members, table: t, rand: s.env.Rand}
}

// hashTable is a Maglev table or a ring for one membership.
type hashTable struct {
	// ids and weights are the members', sorted by id.
	ids     []string
	weights []float64
	// maglev maps a slot to a member; nil for a ring.
	maglev []int32
	ring   hashRing
}

// newHashTable builds the table for members, sorted by id.
func newHashTable(members []*Replica, cfg ConsistentHashConfig) *hashTable {
	t := &hashTable{ids: make([]string, len(members)), weights: make([]float64, len(members))}
	for i, r := range members {
		t.ids[i], t.weights[i] = r.ID, weightOf(r)
	}
	if cfg.Method == HashRing {
		t.ring = newHashRing(t.ids, t.weights, cfg.VNodes)
	} else {
		t.maglev = newMaglevTable(t.ids, t.weights, cfg.TableSize)
	}
	return t
}

// builtFor reports whether t was built for members' ids and weights.
func (t *hashTable) builtFor(members []*Replica) bool {
	if len(members) != len(t.ids) {
		return false
	}
	for i, r := range members {
		if r.ID != t.ids[i] || weightOf(r) != t.weights[i] {
			return false
		}
	}
	return true
}

type consistentHashPicker struct {
	// members are the replicas sorted by id, as the table indexes them.
	members []*Replica
	table   *hashTable
	rand    Rand
}

func (p *consistentHashPicker) Pick(r *Request) (*Replica, error) {
	keyed := r != nil && r.Key != ""
	if m := p.table.maglev; m != nil {
		var slot int
		if keyed {
			slot = int(hashString(r.Key, keyHashSeed) % uint64(len(m)))
		} else {
			slot = p.rand.IntN(len(m))
		}
		return p.members[m[slot]], nil
	}
	ring := p.table.ring
	if keyed {
		return p.members[ring.lookup(hashString(r.Key, keyHashSeed))], nil
	}
	return p.members[ring[p.rand.IntN(len(ring))].index], nil
}

// parseHashKey parses consistent-hash's key parameter.
func parseHashKey(s string) (KeySpec, bool) {
	if s == "client-address" {
		return KeySpec{Source: KeyClientAddress}, true
	}
	if name, ok := strings.CutPrefix(s, "header:"); ok && isHTTPToken(name) {
		return KeySpec{Source: KeyHeader, Name: name}, true
	}
	if name, ok := strings.CutPrefix(s, "cookie:"); ok && isHTTPToken(name) {
		return KeySpec{Source: KeyCookie, Name: name}, true
	}
	return KeySpec{}, false
}

// isHTTPToken reports whether s is a non-empty RFC 9110 token, the syntax
// of header and cookie names.
func isHTTPToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// Seeds of the independent hash functions consistent hashing uses.
const (
	keyHashSeed = iota
	maglevOffsetSeed
	maglevSkipSeed
	ringPointSeed
)

// hashString is 64-bit FNV-1a of s from a seeded basis, finished with
// fmix64 so that similar strings spread over the whole range.
func hashString(s string, seed uint64) uint64 {
	const (
		fnvBasis = 14695981039346656037
		fnvPrime = 1099511628211
	)
	h := uint64(fnvBasis) + seed*0x9e3779b97f4a7c15
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return fmix64(h)
}

// fmix64 is MurmurHash3's 64-bit finaliser (Appleby): every input bit
// affects every output bit.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
