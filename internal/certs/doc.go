// Package certs holds fulcrum's TLS certificates, read from files and
// reloaded while in use: the server side of its listeners (front doors and
// the admin API: ServerSet, below) and the client side toward replicas and
// the admin API (Client, client.go).
//
// A ServerSet is one listener's certificates: a default pair, more pairs
// chosen by SNI, an optional client CA (then client certificates are
// required and verified), a minimum TLS version and the ALPN protocols. Its
// TLSConfig is handed to crypto/tls once; every handshake reads the pairs
// current at that moment, so a reload applies to new handshakes without
// touching open connections.
//
// Reloading is split the usual way: pairState.step is the pure decision
// (given the bytes of a pair's files, keep the served pair, swap it, or
// keep it and say why — once per reason), and ServerSet does the reading,
// on Reload or at every tick of Run.
//
//	set, err := certs.NewServerSet(certs.ServerConfig{Listener: "group web", Cert: "web.pem", Key: "web-key.pem"}, certs.ServerOptions{})
//	if err != nil { ... exit 2 ... }
//	go set.Run(ctx, clock.Real().NewTicker(certs.PollInterval))
//	ln = tls.NewListener(ln, set.TLSConfig())
package certs
