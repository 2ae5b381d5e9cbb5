package replagent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// StoreFile is the agent's file in its data directory.
const StoreFile = "agent.db"

var (
	bucketAgent = []byte("replagent")
	keyGroup    = []byte("group")
	keyApplied  = []byte("applied")
)

// Store keeps the agent's applied position durably: a bbolt file,
// StoreFile in the data directory, fsynced at every SetApplied. It records
// the group too, and refuses a directory of another group. Safe for
// concurrent use.
type Store struct {
	db *bolt.DB
}

// OpenStore opens (or creates) the store of group in dir. A store held
// open by another agent is an error after a second.
func OpenStore(dir, group string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("replagent: data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, StoreFile)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("replagent: data dir %s: %s is in use by another agent", dir, StoreFile)
		}
		return nil, fmt.Errorf("replagent: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketAgent)
		if err != nil {
			return err
		}
		switch g := b.Get(keyGroup); {
		case g == nil:
			return b.Put(keyGroup, []byte(group))
		case string(g) != group:
			return fmt.Errorf("replagent: data dir %s belongs to group %q, not %q: give each replica of each group a directory of its own", dir, g, group)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db}, nil
}

// Applied returns the position stored (0: none).
func (s *Store) Applied() (uint64, error) {
	var pos uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketAgent).Get(keyApplied)
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			return fmt.Errorf("replagent: %s: applied position of %d bytes, want 8", s.db.Path(), len(v))
		}
		pos = binary.BigEndian.Uint64(v)
		return nil
	})
	return pos, err
}

// SetApplied stores pos; it returns once the file is synced.
func (s *Store) SetApplied(pos uint64) error {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], pos)
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketAgent).Put(keyApplied, v[:]) })
	if err != nil {
		return fmt.Errorf("replagent: store applied position %d: %w", pos, err)
	}
	return nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }
