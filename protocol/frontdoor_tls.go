package protocol

// FrontDoorTLS makes an HTTP group's front door terminate TLS (key tls;
// protocol http only). Files are paths on the balancer that serves the
// group, read at start, at every reload and polled every 10 s.
type FrontDoorTLS struct {
	// Cert and Key are the default certificate and its key (PEM files);
	// required when tls is set. Served when the client's SNI matches no
	// certificate of Certs.
	Cert string `json:"cert,omitempty" yaml:"cert,omitempty"`
	Key  string `json:"key,omitempty" yaml:"key,omitempty"`
	// Certs are more certificates, each served to clients whose SNI names
	// a host it covers.
	Certs []CertPair `json:"certs,omitempty" yaml:"certs,omitempty"`
	// ClientCA, when set, is a PEM file of CAs: clients must present a
	// certificate one of them signed.
	ClientCA string `json:"client_ca,omitempty" yaml:"client_ca,omitempty"`
	// MinVersion is the lowest TLS version accepted: "1.2" (default) or
	// "1.3".
	MinVersion string `json:"min_version,omitempty" yaml:"min_version,omitempty"`
}

// CertPair is a certificate and its key, as PEM file paths.
type CertPair struct {
	Cert string `json:"cert" yaml:"cert"`
	Key  string `json:"key" yaml:"key"`
}

// Enabled reports whether any key of t is set: the front door then
// terminates TLS.
func (t FrontDoorTLS) Enabled() bool {
	return t.Cert != "" || t.Key != "" || len(t.Certs) > 0 || t.ClientCA != "" || t.MinVersion != ""
}

// TLSMinVersions are the values FrontDoorTLS.MinVersion allows.
var TLSMinVersions = []string{"1.2", "1.3"}
