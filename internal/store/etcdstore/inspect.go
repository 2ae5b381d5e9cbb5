package etcdstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fulcrum-lb/fulcrum/internal/store"
)

// Contents is everything under a prefix, as Inspect read it.
type Contents struct {
	// Schema is the schema version recorded under the prefix; 0 when
	// there is none.
	Schema int
	// KVs are the store's keys, relative as Store.List returns them, in
	// byte order.
	KVs []store.KV
	// Others are the other keys under the prefix (neither the store's nor
	// the schema version: an instance directory, leader keys), whole.
	Others []string
	// Rev is the etcd revision everything was read at.
	Rev int64
}

// Empty reports whether the prefix holds nothing but, at most, its schema
// version.
func (c Contents) Empty() bool { return len(c.KVs) == 0 && len(c.Others) == 0 }

// Inspect reads everything under opts.Prefix in one linearizable read and
// writes nothing (Open writes the schema version on an empty prefix), for
// tools that must change nothing, such as fulcrum migrate --dry-run. It
// fails within opts.DialTimeout when etcd cannot be reached, naming etcd
// and its endpoints, and when the schema version is not a number.
func Inspect(ctx context.Context, opts Options) (Contents, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Contents{}, err
	}
	cfg, err := clientConfig(opts)
	if err != nil {
		return Contents{}, err
	}
	endpoints := strings.Join(opts.Endpoints, ",")
	cli, err := clientv3.New(cfg)
	if err != nil {
		return Contents{}, fmt.Errorf("store: etcd at %s: connect: %w", endpoints, err)
	}
	defer cli.Close()
	rctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	resp, err := cli.Get(rctx, opts.Prefix, clientv3.WithPrefix())
	if err != nil {
		return Contents{}, fmt.Errorf("store: etcd at %s: read prefix %s: %w", endpoints, opts.Prefix, err)
	}
	c := Contents{Rev: resp.Header.Revision}
	kvPrefix, schema := opts.Prefix+"kv/", opts.Prefix+schemaKey
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		switch {
		case k == schema:
			v, err := strconv.Atoi(string(kv.Value))
			if err != nil {
				return Contents{}, fmt.Errorf("store: etcd at %s: %s: schema version %q is not a number: corrupt, or not written by fulcrum", endpoints, k, kv.Value)
			}
			c.Schema = v
		case strings.HasPrefix(k, kvPrefix):
			v := kv.Value
			if v == nil {
				v = []byte{}
			}
			c.KVs = append(c.KVs, store.KV{Key: k[len(kvPrefix):], Value: v, ModRev: kv.ModRevision, CreateRev: kv.CreateRevision})
		default:
			c.Others = append(c.Others, k)
		}
	}
	return c, nil
}
