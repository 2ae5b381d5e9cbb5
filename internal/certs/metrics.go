package certs

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports fulcrum_tls_cert_not_after_timestamp_seconds for the
// ServerSets added to it, read at every scrape. Safe for concurrent use.
type Collector struct {
	desc *prometheus.Desc

	mu   sync.Mutex
	sets map[*ServerSet]struct{}
}

// NewCollector returns a collector with no sets.
func NewCollector() *Collector {
	return &Collector{
		desc: prometheus.NewDesc("fulcrum_tls_cert_not_after_timestamp_seconds",
			"When a served TLS certificate expires (its NotAfter), in Unix seconds.", []string{"listener", "name"}, nil),
		sets: map[*ServerSet]struct{}{},
	}
}

// Add starts exporting s; nil c or s is ignored.
func (c *Collector) Add(s *ServerSet) {
	if c == nil || s == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sets[s] = struct{}{}
}

// Remove stops exporting s.
func (c *Collector) Remove(s *ServerSet) {
	if c == nil || s == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sets, s)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	sets := make([]*ServerSet, 0, len(c.sets))
	for s := range c.sets {
		sets = append(sets, s)
	}
	c.mu.Unlock()
	seen := map[[2]string]bool{}
	for _, s := range sets {
		for _, e := range s.Expiries() {
			k := [2]string{e.Listener, e.Name}
			if seen[k] {
				continue
			}
			seen[k] = true
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(e.NotAfter.Unix()), e.Listener, e.Name)
		}
	}
}
