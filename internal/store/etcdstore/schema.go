package etcdstore

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// SchemaVersion is the layout this code writes under the prefix, recorded
// at <prefix>meta/schema. It numbers the layout of the store's relative
// keys (groups/<name>, replicas/<group>/<id>: package groupstore) as
// boltstore.SchemaVersion does, so the two move together.
const SchemaVersion = 2

// schemaKey is where the schema version is, under the prefix.
const schemaKey = "meta/schema"

// checkSchema refuses a prefix written by a newer schema, or holding keys
// without a schema version, and writes the version on an empty prefix
// (atomically: the first of several instances starting at once writes it,
// the others read it).
func (s *Store) checkSchema(ctx context.Context) error {
	key := s.opts.Prefix + schemaKey
	for range 2 {
		rctx, cancel, err := s.reqCtx(ctx)
		if err != nil {
			return err
		}
		resp, err := s.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpGet(s.opts.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())).
			Else(clientv3.OpGet(key)).Commit()
		cancel()
		if err != nil {
			return s.wrap("read schema version", key, err)
		}
		if !resp.Succeeded {
			raw := string(resp.Responses[0].GetResponseRange().Kvs[0].Value)
			v, err := strconv.Atoi(raw)
			switch {
			case err != nil:
				return fmt.Errorf("store: etcd at %s: %s: schema version %q is not a number: corrupt, or not written by fulcrum", s.endpoints, key, raw)
			case v > SchemaVersion:
				return fmt.Errorf("store: etcd at %s: %s: written with schema version %d, newer than this fulcrum knows (%d): run the fulcrum that wrote it, or a newer one", s.endpoints, key, v, SchemaVersion)
			case v < SchemaVersion:
				return fmt.Errorf("store: etcd at %s: %s: schema version %d, older than any this fulcrum reads (%d)", s.endpoints, key, v, SchemaVersion)
			}
			return nil
		}
		if n := resp.Responses[0].GetResponseRange().Count; n > 0 {
			return fmt.Errorf("store: etcd at %s: prefix %s holds %d keys but no schema version (%s): not written by fulcrum; choose another prefix", s.endpoints, s.opts.Prefix, n, key)
		}
		rctx, cancel, err = s.reqCtx(ctx)
		if err != nil {
			return err
		}
		put, err := s.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, strconv.Itoa(SchemaVersion))).Commit()
		cancel()
		if err != nil {
			return s.wrap("write schema version", key, err)
		}
		if put.Succeeded {
			return nil
		}
		// Another instance wrote it meanwhile: read it again.
	}
	return fmt.Errorf("store: etcd at %s: %s: written and deleted again while opening", s.endpoints, key)
}
