package protocol

// ReplicaTLS configures the TLS client side of a group's connections to
// its https:// replicas: proxied calls, health probes, strategy probes and
// report pulls. Files are PEM paths on the disk of the balancer serving the
// group, read when the group is created or changed. The zero value verifies
// replicas with the system roots and presents no client certificate.
type ReplicaTLS struct {
	// CA verifies the replicas' certificates; empty: the system roots.
	CA string `json:"ca,omitempty" yaml:"ca,omitempty"`
	// Cert and Key are the client certificate presented to replicas that
	// require one (mTLS); both or neither.
	Cert string `json:"cert,omitempty" yaml:"cert,omitempty"`
	Key  string `json:"key,omitempty" yaml:"key,omitempty"`
	// ServerName is the name verified in the replicas' certificates and
	// sent by SNI; empty: each replica's host.
	ServerName string `json:"server_name,omitempty" yaml:"server_name,omitempty"`
	// InsecureSkipVerify accepts any replica certificate (default false;
	// the balancer logs a warning when it is set).
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty" yaml:"insecure_skip_verify,omitempty"`
}
