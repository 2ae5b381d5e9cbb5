package migrate

import (
	"context"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// Verification is the result of reading the copied keys back.
type Verification struct {
	// Checked is how many of src's keys were compared.
	Checked int
	// Missing are src's keys the target does not hold; Different those it
	// holds with another value.
	Missing, Different []string
}

// OK reports whether every key was found with its value.
func (v Verification) OK() bool { return len(v.Missing) == 0 && len(v.Different) == 0 }

// Verify reads every key of dst back (one List) and compares each key of
// src with it, byte for byte.
func Verify(ctx context.Context, dst store.Store, src []store.KV) (Verification, error) {
	kvs, _, err := dst.List(ctx, "")
	if err != nil {
		return Verification{}, fmt.Errorf("migrate: read back: %w", err)
	}
	held := make(map[string][]byte, len(kvs))
	for _, kv := range kvs {
		held[kv.Key] = kv.Value
	}
	var v Verification
	for _, kv := range src {
		v.Checked++
		got, ok := held[kv.Key]
		switch {
		case !ok:
			v.Missing = append(v.Missing, kv.Key)
		case string(got) != string(kv.Value):
			v.Different = append(v.Different, kv.Key)
		}
	}
	return v, nil
}
