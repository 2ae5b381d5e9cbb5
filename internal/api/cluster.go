package api

import (
	"net/http"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// cluster answers GET /v1/cluster: the instances of the cluster
// (Options.Cluster), the leader of each group (Options.Leaders; an empty
// object without) and etcd's endpoints. Without Options.Cluster it
// answers a single node with no instance listed.
func (s *server) cluster(w http.ResponseWriter, r *http.Request) {
	c := protocol.Cluster{Mode: protocol.ClusterModeSingle}
	if s.opts.Cluster != nil {
		c = s.opts.Cluster(r.Context())
	}
	if c.Instances == nil {
		c.Instances = []protocol.ClusterInstance{}
	}
	c.Leaders = map[string]string{}
	if s.opts.Leaders != nil {
		for g, in := range s.opts.Leaders() {
			c.Leaders[g] = in
		}
	}
	writeJSON(w, http.StatusOK, c)
}
