// Package registry is fulcrum's configuration and membership: groups,
// replicas and their tokens, validated here and persisted through a
// store.Store. Loads are soft state and never reach it.
package registry

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Store buckets.
const (
	bucketGroups   = "groups"
	bucketReplicas = "replicas"
)

// Registry persists groups and replicas. Safe for concurrent use as far as
// the underlying Store is.
type Registry struct {
	st store.Store
}

// New returns a registry over st.
func New(st store.Store) *Registry { return &Registry{st: st} }

// Snapshot is everything persisted.
type Snapshot struct {
	Groups   []protocol.Group
	Replicas []protocol.Replica
}

// Load reads every group and replica.
func (r *Registry) Load() (Snapshot, error) {
	var s Snapshot
	err := r.st.View(func(tx store.Tx) error {
		if err := tx.List(bucketGroups, func(_ string, v []byte) error {
			var g protocol.Group
			if err := json.Unmarshal(v, &g); err != nil {
				return fmt.Errorf("registry: corrupt group record: %w", err)
			}
			s.Groups = append(s.Groups, g)
			return nil
		}); err != nil {
			return err
		}
		return tx.List(bucketReplicas, func(_ string, v []byte) error {
			var rep protocol.Replica
			if err := json.Unmarshal(v, &rep); err != nil {
				return fmt.Errorf("registry: corrupt replica record: %w", err)
			}
			s.Replicas = append(s.Replicas, rep)
			return nil
		})
	})
	return s, err
}

// PutGroup stores g (replacing any group of the same name).
func (r *Registry) PutGroup(g protocol.Group) error {
	data, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return r.st.Update(func(tx store.Tx) error { return tx.Put(bucketGroups, g.Name, data) })
}

// DeleteGroup removes a group and all its replicas.
func (r *Registry) DeleteGroup(name string) error {
	return r.st.Update(func(tx store.Tx) error {
		var ids []string
		if err := tx.List(bucketReplicas, func(k string, v []byte) error {
			var rep protocol.Replica
			if json.Unmarshal(v, &rep) == nil && rep.Group == name {
				ids = append(ids, k)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range ids {
			if err := tx.Delete(bucketReplicas, k); err != nil {
				return err
			}
		}
		return tx.Delete(bucketGroups, name)
	})
}

// PutReplica stores rep.
func (r *Registry) PutReplica(rep protocol.Replica) error {
	data, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	return r.st.Update(func(tx store.Tx) error { return tx.Put(bucketReplicas, replicaKey(rep.Group, rep.ID), data) })
}

// DeleteReplica removes a replica.
func (r *Registry) DeleteReplica(group, id string) error {
	return r.st.Update(func(tx store.Tx) error { return tx.Delete(bucketReplicas, replicaKey(group, id)) })
}

// GetGroup reads one group.
func (r *Registry) GetGroup(name string) (protocol.Group, error) {
	var g protocol.Group
	err := r.st.View(func(tx store.Tx) error {
		v, err := tx.Get(bucketGroups, name)
		if err != nil {
			return err
		}
		return json.Unmarshal(v, &g)
	})
	if errors.Is(err, store.ErrNotFound) {
		return g, err
	}
	return g, err
}

func replicaKey(group, id string) string { return group + "/" + id }
