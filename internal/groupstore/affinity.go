package groupstore

import (
	"net/url"
	"strconv"
)

// AffinityPrefix is the key prefix of the client-activated entries of the
// groups' session tables in cluster mode (package affinity/etcdstore
// writes them, each on an etcd lease of its own; docs/affinity.md). They
// are deleted with their group.
const AffinityPrefix = "affinity/"

// AffinityOf is the prefix of group's client-activated entries.
func AffinityOf(group string) string { return AffinityPrefix + group + "/" }

// AffinityKey is the key of the entry of rule's object key in group; the
// object key is escaped (url.PathEscape), so that it holds no "/".
func AffinityKey(group string, rule int, key string) string {
	return AffinityOf(group) + strconv.Itoa(rule) + "/" + url.PathEscape(key)
}
