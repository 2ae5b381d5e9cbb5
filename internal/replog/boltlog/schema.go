package boltlog

import (
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// schemaVersion is the layout version, in the root key "schema".
const schemaVersion = 1

var schemaKey = []byte("schema")

// checkSchema writes the version into a new file and refuses a file of
// another version.
func checkSchema(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists([]byte("meta"))
		if err != nil {
			return err
		}
		v := meta.Get(schemaKey)
		if v == nil {
			return meta.Put(schemaKey, []byte(strconv.Itoa(schemaVersion)))
		}
		if n, err := strconv.Atoi(string(v)); err != nil || n != schemaVersion {
			return fmt.Errorf("log schema version %q, this fulcrum reads %d", v, schemaVersion)
		}
		return nil
	})
}
