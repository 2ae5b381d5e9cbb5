package groupstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// BlocksPrefix is the key prefix of blocked addresses.
const BlocksPrefix = "blocks/"

// Block is an address a group refuses to register (fulcrum ctl remove
// --block) until it is lifted.
type Block struct {
	Group string `json:"group"`
	// Address is the address as it was blocked.
	Address string `json:"address"`
	// Match is the form addresses are compared in
	// (registry.NormalizeAddress); it names the record.
	Match   string    `json:"match"`
	Created time.Time `json:"created"`
}

// BlockKey is the key of the block of match in group: the match's SHA-256
// in hex, since an address may hold "/".
func BlockKey(group, match string) string {
	sum := sha256.Sum256([]byte(match))
	return BlocksOf(group) + hex.EncodeToString(sum[:16])
}

// BlocksOf is the prefix of group's blocks.
func BlocksOf(group string) string { return BlocksPrefix + group + "/" }

// PutBlock stores b (replacing a block of the same match).
func (r *Records) PutBlock(b Block) error {
	return r.put(BlockKey(b.Group, b.Match), b)
}

// DeleteBlock lifts the block of match in group.
func (r *Records) DeleteBlock(group, match string) error {
	key := BlockKey(group, match)
	if _, _, _, err := r.st.Txn(context.Background(), nil, []store.Op{store.Delete(key)}); err != nil {
		return fmt.Errorf("groupstore: delete %s: %w", key, err)
	}
	return nil
}
