package groupstore

import "github.com/fulcrum-lb/fulcrum/internal/store"

// HealthPrefix is the key prefix of the replicas' health states as a
// cluster's analyzer leader decided them (its active health checks).
const HealthPrefix = "health/"

// Health is a replica's health state, written by the group's analyzer
// leader (through its fence) when its active checks change it, and
// followed by the other instances, which do not probe. Deleted with its
// replica. A single node writes none.
type Health struct {
	Group string `json:"group"`
	ID    string `json:"id"`
	// State is "up" or "down" (health.Up, health.Down).
	State string `json:"state"`
	// Term is the term of the leader that decided it.
	Term int64 `json:"term"`
}

// HealthKey is the key of replica id's health state in group.
func HealthKey(group, id string) string { return HealthPrefix + group + "/" + id }

// HealthOf is the prefix of group's health states.
func HealthOf(group string) string { return HealthPrefix + group + "/" }

// PutHealth stores h.
func (r *Records) PutHealth(h Health) error {
	return r.put(HealthKey(h.Group, h.ID), h)
}

// deleteHealth is the op that deletes replica id's health state.
func deleteHealth(group, id string) store.Op { return store.Delete(HealthKey(group, id)) }
