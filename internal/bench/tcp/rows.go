package tcp

import "github.com/fulcrum-lb/fulcrum/internal/bench"

// Row is one arm in one part of the experiment, a row of results.json.
type Row struct {
	// Part is PartExchange, PartBulk, PartConnect or PartIdle.
	Part string `json:"part"`
	// Name is the arm: direct, fulcrum, haproxy or nginx.
	Name string `json:"name"`
	// Connections are the connections open at once: the closed-loop
	// workers, or the idle connections.
	Connections int `json:"connections"`
	// Skipped says why the arm did not run.
	Skipped string `json:"skipped,omitempty"`
	// Note says why a row has no figures though it ran (direct has no
	// balancer process to measure the memory of).
	Note string `json:"note,omitempty"`
	// Figures are the operations' (exchanges, transfers, connections):
	// calls, throughput_rps (operations per second) and latencies.
	*bench.Figures
	// FirstError is the first failed operation's error.
	FirstError string `json:"first_error,omitempty"`
	// ThroughputMiBs is a bulk row's payload echoed per second, in MiB.
	ThroughputMiBs float64 `json:"throughput_mib_s,omitempty"`
	// VsHAProxy compares the row with HAProxy's in the same part.
	VsHAProxy *Ratios `json:"vs_haproxy,omitempty"`
	// Memory is an idle row's.
	Memory *Memory `json:"memory,omitempty"`
}

// Memory is a balancer process's resident memory and descriptors before
// the idle connections were opened and with them open.
type Memory struct {
	RSSBeforeBytes        int64   `json:"rss_before_bytes"`
	RSSBytes              int64   `json:"rss_bytes"`
	FDsBefore             int     `json:"fds_before"`
	FDs                   int     `json:"fds"`
	RSSPerConnectionBytes float64 `json:"rss_per_connection_bytes"`
	FDsPerConnection      float64 `json:"fds_per_connection"`
}

// Ratios are a row's figures divided by HAProxy's in the same part (and
// connection count).
type Ratios struct {
	Throughput float64 `json:"throughput"`
	P50        float64 `json:"p50"`
	P99        float64 `json:"p99"`
	// RSSPerConnection is an idle row's.
	RSSPerConnection float64 `json:"rss_per_connection,omitempty"`
}

// haproxyRow returns HAProxy's measured row matching r's part and
// connections, nil when there is none.
func haproxyRow(rows []Row, r Row) *Row {
	for i := range rows {
		h := &rows[i]
		if h.Name == ArmHAProxy && h.Part == r.Part && h.Connections == r.Connections && h.Skipped == "" {
			return h
		}
	}
	return nil
}

// addRatios sets every measured row's VsHAProxy.
func addRatios(rows []Row) {
	for i := range rows {
		r := &rows[i]
		h := haproxyRow(rows, *r)
		if h == nil || r.Skipped != "" {
			continue
		}
		switch {
		case r.Figures != nil && h.Figures != nil:
			r.VsHAProxy = &Ratios{
				Throughput: ratio(r.ThroughputRPS, h.ThroughputRPS),
				P50:        ratio(r.P50, h.P50),
				P99:        ratio(r.P99, h.P99),
			}
		case r.Memory != nil && h.Memory != nil:
			r.VsHAProxy = &Ratios{RSSPerConnection: ratio(r.Memory.RSSPerConnectionBytes, h.Memory.RSSPerConnectionBytes)}
		}
	}
}

// ratio is a/b, 0 when b is not positive.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}
