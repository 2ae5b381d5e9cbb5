package balancer

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fulcrum-lb/fulcrum/internal/groupstore"
	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Blocks: addresses a group refuses to register until the block is lifted,
// so that an operator's removal sticks while the replica's monitor is
// alive (it registers again as soon as its token stops working). A block
// is persisted like a replica and compared in registry.NormalizeAddress
// form. It stops registrations (the monitor's, ctl add's); replicas
// declared in the config file are not registrations and are not affected.

// BlockedError is returned when a blocked address registers (403).
type BlockedError struct {
	Group, Address string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("balancer: address %s is blocked in group %s (fulcrum ctl remove --block); lift the block with \"fulcrum ctl unblock %s %s\"",
		e.Address, e.Group, e.Group, e.Address)
}

// ErrUnknownBlock: the address is not blocked in the group (404).
var ErrUnknownBlock = errors.New("balancer: address not blocked")

// blockedLocked reports whether addr is blocked in g. Caller holds g.mu.
func (g *group) blockedLocked(addr string) bool {
	_, ok := g.blocks[registry.NormalizeAddress(addr)]
	return ok
}

// blockedAddressesLocked are g's blocked addresses, as blocked, sorted.
// Caller holds g.mu.
func (g *group) blockedAddressesLocked() []string {
	if len(g.blocks) == 0 {
		return nil
	}
	out := make([]string, 0, len(g.blocks))
	for _, b := range g.blocks {
		out = append(out, b.Address)
	}
	slices.Sort(out)
	return out
}

// restoreBlockLocked adds a stored block. Caller holds g.mu (or g is not
// yet shared).
func (g *group) restoreBlockLocked(b groupstore.Block) {
	if g.blocks == nil {
		g.blocks = map[string]groupstore.Block{}
	}
	g.blocks[b.Match] = b
}

// Block makes group refuse to register addr until Unblock. created is false
// when addr was blocked already. A replica registered at addr now stays
// (RemoveReplicaBlocking removes it too).
func (b *Balancer) Block(groupName, addr string) (created bool, err error) {
	g, err := b.group(groupName)
	if err != nil {
		return false, err
	}
	if err := b.StoreUnreachable(); err != nil {
		return false, err // degraded.go
	}
	g.mu.Lock()
	if err := registry.ValidateGroupAddress(g.spec, addr); err != nil {
		g.mu.Unlock()
		return false, &protocol.FieldError{Field: "address", Value: addr, Allowed: err.Error()}
	}
	match := registry.NormalizeAddress(addr)
	if _, ok := g.blocks[match]; ok {
		g.mu.Unlock()
		return false, nil
	}
	blk := groupstore.Block{Group: g.name, Address: addr, Match: match, Created: b.now().UTC()}
	g.restoreBlockLocked(blk)
	w := g.queueWriteLocked(&storeWrite{putBlock: &blk})
	g.mu.Unlock()
	g.flushWrites()
	if err := writeErr(w); err != nil {
		g.mu.Lock()
		delete(g.blocks, match)
		g.mu.Unlock()
		return false, err
	}
	b.log.Info("address blocked", "group", groupName, "address", addr)
	return true, nil
}

// Unblock lifts the block of addr (in any form that normalizes the same);
// ErrUnknownBlock when there is none.
func (b *Balancer) Unblock(groupName, addr string) error {
	g, err := b.group(groupName)
	if err != nil {
		return err
	}
	if err := b.StoreUnreachable(); err != nil {
		return err // degraded.go
	}
	match := registry.NormalizeAddress(addr)
	g.mu.Lock()
	blk, ok := g.blocks[match]
	if !ok {
		g.mu.Unlock()
		return fmt.Errorf("%w: %s in group %s", ErrUnknownBlock, addr, groupName)
	}
	delete(g.blocks, match)
	w := g.queueWriteLocked(&storeWrite{delBlock: match})
	g.mu.Unlock()
	g.flushWrites()
	if err := writeErr(w); err != nil {
		g.mu.Lock()
		g.restoreBlockLocked(blk)
		g.mu.Unlock()
		return err
	}
	b.log.Info("address unblocked", "group", groupName, "address", blk.Address)
	return nil
}

// RemoveReplicaBlocking blocks a replica's address, then removes it as
// RemoveReplica does: its monitor cannot register it again until the
// address is unblocked. It returns the address blocked.
func (b *Balancer) RemoveReplicaBlocking(groupName, id string) (string, error) {
	g, m, err := b.member(groupName, id)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	addr := m.rec.Address
	g.mu.Unlock()
	if _, err := b.Block(groupName, addr); err != nil {
		return "", err
	}
	return addr, b.RemoveReplica(groupName, id)
}
