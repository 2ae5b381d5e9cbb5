// Package capture reads GIOP test vectors from packet captures: classic
// libpcap files of TCP traffic, each direction of each connection
// reassembled by sequence number and cut into GIOP messages by the size in
// their 12-byte headers. It exists for the codec's tests; it knows the
// link types a loopback or Ethernet capture on Linux, BSD or macOS uses
// (null/loop, Ethernet with optional VLAN tags, raw IP, Linux cooked v1 and
// v2), IPv4 and IPv6, and nothing else.
package capture
