package protocol

import "time"

// Modes of a Cluster answer.
const (
	// ClusterModeCluster: the state is on etcd, shared by the instances
	// listed.
	ClusterModeCluster = "cluster"
	// ClusterModeSingle: one balancer, its state in its own data_dir.
	ClusterModeSingle = "single"
)

// Cluster is the answer of GET /v1/cluster: the instances of the cluster
// as the answering instance sees them, the leader of each group and the
// health of etcd's endpoints.
type Cluster struct {
	// Mode is ClusterModeCluster (store.etcd) or ClusterModeSingle.
	Mode string `json:"mode"`
	// Instance is the answering instance's name.
	Instance string `json:"instance"`
	// Instances are the live instances (their directory entries), sorted
	// by name; on a single node, the one balancer.
	Instances []ClusterInstance `json:"instances"`
	// Leaders maps each group that has a leader to the instance leading
	// it; empty when leadership is not known (a single node).
	Leaders map[string]string `json:"leaders"`
	// Etcd is the health of each etcd endpoint; absent on a single node.
	Etcd *ClusterEtcd `json:"etcd,omitempty"`
}

// ClusterInstance is one instance of a cluster.
type ClusterInstance struct {
	Name string `json:"name"`
	// AdminURL is where the other instances reach its admin API.
	AdminURL string `json:"admin_url"`
	// FrontDoors are its groups' front doors as bound there (or why they
	// are not), by group.
	FrontDoors map[string]FrontDoorBinding `json:"front_doors"`
	// Started is when the instance started.
	Started time.Time `json:"started"`
	// Version is its fulcrum version.
	Version string `json:"version"`
	// Self is true for the answering instance.
	Self bool `json:"self"`
}

// FrontDoorBinding is one group's front door on one instance: the address
// it listens on, or the error that keeps it from listening.
type FrontDoorBinding struct {
	Address string `json:"address,omitempty"`
	Error   string `json:"error,omitempty"`
}

// ClusterEtcd is etcd as the answering instance reaches it.
type ClusterEtcd struct {
	// Prefix is the deployment's etcd prefix.
	Prefix string `json:"prefix"`
	// Endpoints are the configured endpoints, in the config file's order.
	Endpoints []EtcdEndpoint `json:"endpoints"`
}

// EtcdEndpoint is one etcd endpoint's answer to a status call.
type EtcdEndpoint struct {
	// Endpoint is the client URL.
	Endpoint string `json:"endpoint"`
	// Reachable is true when the endpoint answered in time.
	Reachable bool `json:"reachable"`
	// Version is the etcd server's version.
	Version string `json:"version,omitempty"`
	// Leader is true when the member is etcd's (raft) leader.
	Leader bool `json:"leader"`
	// DBSize is the member's database size in bytes.
	DBSize int64 `json:"db_size,omitempty"`
	// Error says why it is not reachable (or what it reports wrong).
	Error string `json:"error,omitempty"`
}
