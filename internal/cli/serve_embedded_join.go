package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/config"
)

// minJoinCluster is the oldest etcd cluster version (major, minor) that a
// member of this etcd (3.7) may join: etcd upgrades one minor version at
// a time, and a 3.7 member added to a 3.4 cluster panics on the first
// entry it applies.
var minJoinCluster = [2]int{3, 6}

// versionTimeout bounds the question to each peer.
const versionTimeout = 2 * time.Second

// checkJoinVersion asks the peers other than self for their version
// (etcd answers GET /version on its peer URL) before a member joins a
// running cluster, and refuses a cluster older than minJoinCluster,
// naming the peer and its version. Peers that do not answer are skipped:
// the member's own start then decides.
func checkJoinVersion(ctx context.Context, peers []config.EtcdPeer, self string) error {
	hc := &http.Client{Timeout: versionTimeout}
	defer hc.CloseIdleConnections()
	for _, p := range peers {
		if p.Name == self {
			continue
		}
		v, ok := peerVersion(ctx, hc, p.URL)
		if !ok {
			continue
		}
		var major, minor int
		if _, err := fmt.Sscanf(v.Cluster, "%d.%d", &major, &minor); err != nil {
			continue
		}
		if major < minJoinCluster[0] || (major == minJoinCluster[0] && minor < minJoinCluster[1]) {
			return fmt.Errorf("serve: store.etcd.embedded.join (--etcd-join): member %s (%s) runs etcd %s, cluster version %s: the embedded etcd member (3.7) joins only clusters of version %d.%d or later; run an external etcd of that cluster's version instead, or upgrade that cluster first", p.Name, p.URL, v.Server, v.Cluster, minJoinCluster[0], minJoinCluster[1])
		}
	}
	return nil
}

// etcdVersion is etcd's answer to GET /version.
type etcdVersion struct {
	Server  string `json:"etcdserver"`
	Cluster string `json:"etcdcluster"`
}

// peerVersion asks the etcd member at peerURL for its version.
func peerVersion(ctx context.Context, hc *http.Client, peerURL string) (etcdVersion, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(peerURL, "/")+"/version", nil)
	if err != nil {
		return etcdVersion{}, false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return etcdVersion{}, false
	}
	defer resp.Body.Close()
	var v etcdVersion
	if resp.StatusCode != http.StatusOK || json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 4096)).Decode(&v) != nil || v.Cluster == "" {
		return etcdVersion{}, false
	}
	return v, true
}
