package migrate

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

func kvs(pairs ...string) []store.KV {
	var out []store.KV
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, store.KV{Key: pairs[i], Value: []byte(pairs[i+1])})
	}
	return out
}

func TestDecide(t *testing.T) {
	t.Parallel()
	src := kvs("blocks/a/00ff", "b", "groups/a", "ga", "groups/b", "gb", "moves/a/c1", "m", "replicas/a/r-1", "r1", "replicas/a/r-2", "r2", "aardvark", "x")
	tests := []struct {
		name    string
		src     []store.KV
		schema  int
		t       Target
		force   bool
		kinds   []Kind
		total   Kind
		kept    int
		refusal string
	}{
		{name: "empty target", src: src, schema: 2, t: Target{CodeSchema: 2, Where: "etcd prefix /f/"},
			kinds: []Kind{{"groups", 2, 2, 0, 0}, {"replicas", 2, 2, 0, 0}, {"blocks", 1, 1, 0, 0}, {"aardvark", 1, 1, 0, 0}, {"moves", 1, 1, 0, 0}},
			total: Kind{"total", 7, 7, 0, 0}},
		{name: "target with its schema version only", src: src, schema: 2, t: Target{Schema: 2, CodeSchema: 2},
			kinds: []Kind{{"groups", 2, 2, 0, 0}, {"replicas", 2, 2, 0, 0}, {"blocks", 1, 1, 0, 0}, {"aardvark", 1, 1, 0, 0}, {"moves", 1, 1, 0, 0}},
			total: Kind{"total", 7, 7, 0, 0}},
		{name: "nothing to copy", schema: 2, t: Target{CodeSchema: 2}, total: Kind{Name: "total"}},
		{name: "held without force", src: kvs("groups/a", "ga", "replicas/a/r-1", "r1"), schema: 2,
			t:     Target{Schema: 2, CodeSchema: 2, KVs: kvs("groups/a", "old", "groups/z", "gz", "replicas/a/r-1", "r1"), Others: 1, Where: "etcd prefix /f/"},
			kinds: []Kind{{"groups", 1, 0, 1, 0}, {"replicas", 1, 0, 0, 1}}, total: Kind{"total", 2, 0, 1, 1}, kept: 2,
			refusal: "etcd prefix /f/ already holds fulcrum data (2 groups, 1 replicas, 1 other keys): migrate copies into an empty prefix; --force overwrites"},
		{name: "held with force", src: kvs("groups/a", "ga", "replicas/a/r-1", "r1"), schema: 2, force: true,
			t:     Target{Schema: 2, CodeSchema: 2, KVs: kvs("groups/a", "old", "groups/z", "gz", "replicas/a/r-1", "r1"), Others: 1},
			kinds: []Kind{{"groups", 1, 0, 1, 0}, {"replicas", 1, 0, 0, 1}}, total: Kind{"total", 2, 0, 1, 1}, kept: 2},
		{name: "only other keys held", src: kvs("groups/a", "ga"), schema: 2, t: Target{Schema: 2, CodeSchema: 2, Others: 3, Where: "P"},
			kinds: []Kind{{"groups", 1, 1, 0, 0}}, total: Kind{"total", 1, 1, 0, 0}, kept: 3,
			refusal: "P already holds fulcrum data (3 other keys)"},
		{name: "code schema differs", src: kvs("groups/a", "ga"), schema: 3, t: Target{CodeSchema: 2}, force: true,
			kinds: []Kind{{"groups", 1, 1, 0, 0}}, total: Kind{"total", 1, 1, 0, 0},
			refusal: "the data dir is of schema version 3, the etcd store of this fulcrum writes 2"},
		{name: "recorded schema differs", src: kvs("groups/a", "ga"), schema: 2, t: Target{Schema: 3, CodeSchema: 2, Where: "etcd prefix /f/"}, force: true,
			kinds: []Kind{{"groups", 1, 1, 0, 0}}, total: Kind{"total", 1, 1, 0, 0},
			refusal: "etcd prefix /f/ is of schema version 3, the data dir of 2: choose another prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := Decide(tt.src, tt.schema, tt.t, tt.force)
			if !reflect.DeepEqual(p.Kinds, tt.kinds) || p.Total != tt.total || p.Kept != tt.kept {
				t.Errorf("Decide = kinds %+v total %+v kept %d\nwant kinds %+v total %+v kept %d", p.Kinds, p.Total, p.Kept, tt.kinds, tt.total, tt.kept)
			}
			switch {
			case tt.refusal == "" && p.Refusal != nil:
				t.Errorf("refused: %v", p.Refusal)
			case tt.refusal != "" && (p.Refusal == nil || !strings.Contains(p.Refusal.Error(), tt.refusal) || !errors.Is(p.Refusal, ErrRefused)):
				t.Errorf("refusal = %v, want ErrRefused saying %q", p.Refusal, tt.refusal)
			}
		})
	}
}

func TestChunkLen(t *testing.T) {
	t.Parallel()
	sized := func(sizes ...int) []store.KV {
		var out []store.KV
		for i, n := range sizes {
			out = append(out, store.KV{Key: string(rune('a' + i)), Value: make([]byte, n-1)})
		}
		return out
	}
	many := make([]store.KV, 300)
	for i := range many {
		many[i] = store.KV{Key: "k", Value: []byte("v")}
	}
	tests := []struct {
		name string
		src  []store.KV
		want int
	}{
		{"one", sized(1), 1},
		{"at most MaxTxnOps", many, store.MaxTxnOps},
		{"exactly MaxTxnOps", many[:store.MaxTxnOps], store.MaxTxnOps},
		{"bytes", sized(MaxTxnBytes/2, MaxTxnBytes/2, 1), 2},
		{"over the bytes", sized(MaxTxnBytes/2, MaxTxnBytes/2+1, 1), 1},
		{"one larger than the limit goes alone", sized(MaxTxnBytes*2, 1), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := chunkLen(tt.src); got != tt.want {
				t.Errorf("chunkLen = %d, want %d", got, tt.want)
			}
		})
	}
}
