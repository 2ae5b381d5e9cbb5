package boltstore

import (
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// writeSchema1 writes dir/fulcrum.db as fulcrum wrote it before the schema
// key: one bucket per kind of record.
func writeSchema1(t *testing.T, dir string, buckets map[string]map[string]string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		for name, kvs := range buckets {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			for k, v := range kvs {
				if err := b.Put([]byte(k), []byte(v)); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// bucketsOf lists the file's top-level buckets.
func bucketsOf(t *testing.T, s *Store) string {
	t.Helper()
	var names []string
	if err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, " ")
}

func TestMigrateSchema1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeSchema1(t, dir, map[string]map[string]string{
		"groups":   {"prime": `{"name":"prime"}`, "other": `{"name":"other"}`},
		"replicas": {"prime/r-1": `{"id":"r-1","token_hash":"ab"}`, "other/r-2": `{"id":"r-2"}`},
	})
	s := openT(t, dir)
	kvs, rev, err := s.List(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range kvs {
		got = append(got, kv.Key+"="+string(kv.Value))
		if kv.ModRev != 1 || kv.CreateRev != 1 {
			t.Errorf("%s migrated at mod %d create %d, want 1 and 1", kv.Key, kv.ModRev, kv.CreateRev)
		}
	}
	want := `groups/other={"name":"other"} groups/prime={"name":"prime"} replicas/other/r-2={"id":"r-2"} replicas/prime/r-1={"id":"r-1","token_hash":"ab"}`
	if strings.Join(got, " ") != want {
		t.Fatalf("after migration:\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if rev != 1 {
		t.Errorf("revision after migration = %d, want 1", rev)
	}
	if b := bucketsOf(t, s); b != "kv meta" {
		t.Errorf("buckets after migration = %q, want kv meta (the old ones gone)", b)
	}
	if next := put(t, s, "groups/new", "n"); next != 2 {
		t.Errorf("first revision after migration = %d, want 2", next)
	}
	// Reopening does not migrate again.
	s.Close()
	s = openT(t, dir)
	if kvs, rev, _ := s.List(ctxT(t), ""); len(kvs) != 5 || rev != 2 {
		t.Fatalf("after reopening: %d keys at %d, want 5 at 2", len(kvs), rev)
	}
}

func TestNewFileSchema(t *testing.T) {
	t.Parallel()
	s := openT(t, t.TempDir())
	var schema string
	s.db.View(func(tx *bolt.Tx) error {
		schema = string(tx.Bucket(bucketMeta).Get(keySchema))
		return nil
	})
	if schema != "2" {
		t.Fatalf("schema key of a new file = %q, want 2", schema)
	}
	if _, rev, _ := s.List(ctxT(t), ""); rev != 0 {
		t.Fatalf("revision of a new store = %d, want 0", rev)
	}
}

func TestRefusesUnknownSchema(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, schema, want string }{
		{"future", "3", "written with schema version 3, newer than this fulcrum knows (2)"},
		{"garbage", "x", `corrupt store: schema version "x" is not a number`},
		{"missing", "", `schema version "" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := openT(t, dir)
			put(t, s, "groups/prime", "p")
			if err := s.db.Update(func(tx *bolt.Tx) error {
				if tt.schema == "" {
					return tx.Bucket(bucketMeta).Delete(keySchema)
				}
				return tx.Bucket(bucketMeta).Put(keySchema, []byte(tt.schema))
			}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			_, err := Open(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) {
				t.Fatalf("Open = %v; want an error naming the file and mentioning %q", err, tt.want)
			}
		})
	}
}
