package cluster

import (
	"net"
	"net/url"
)

// Reachable is where another host reaches a listener bound to bound
// (host:port) on the instance whose admin URL is adminURL: bound itself,
// or for a wildcard host ("", 0.0.0.0, ::) the admin URL's host with
// bound's port. "" when bound is not host:port, or is a wildcard and the
// admin URL names no host.
func Reachable(bound, adminURL string) string {
	host, port, err := net.SplitHostPort(bound)
	if err != nil || port == "" || port == "0" {
		return ""
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		return bound
	}
	u, err := url.Parse(adminURL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	return net.JoinHostPort(u.Hostname(), port)
}
