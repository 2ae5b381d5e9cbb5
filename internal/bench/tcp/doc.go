// Package tcp is "fulcrum bench tcp": fulcrum's TCP front door (a
// protocol: tcp group) against HAProxy (mode tcp, nbthread 2, option
// splice-auto) and NGINX (its stream module), with direct connections to
// the replicas as the limit, all in one run, before the same two
// "fulcrum backend echo" replicas. It measures
//
//   - small exchanges: 64-byte requests echoed back, one at a time on
//     each of 1, 4, 16 and 64 persistent connections (throughput, p50,
//     p99);
//   - bulk transfers: 1 MiB sent and echoed back on each of 4 persistent
//     connections (throughput, p99 per transfer);
//   - new connections per second: 16 closed-loop workers each connecting,
//     making one 64-byte exchange and closing;
//   - memory per idle connection: the resident memory and descriptors of
//     each balancer process with 10,000 idle connections open through it,
//     against the same process before they were opened.
//
// The load is generated in the bench process by closed-loop goroutines
// (one per connection); each arm is measured in turn, so the generator
// shares the machine with one balancer at a time. Ratios are against
// HAProxy, measured in the same run; the targets (throughput at least
// HAProxy's and p99 at most HAProxy's for exchanges and bulk, new
// connections per second at least HAProxy's, memory reported beside
// HAProxy's and NGINX's) are marked met or missed in report.md.
package tcp
