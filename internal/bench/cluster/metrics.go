package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// etcdProposalsMetric is etcd's count of committed raft proposals: every
// write (put, txn, delete, lease grant and revoke, ...) is one.
const etcdProposalsMetric = "etcd_server_proposals_committed_total"

// fulcrumWritesMetric is fulcrum's own count of its writes to etcd, by op
// (internal/store/etcdstore).
const fulcrumWritesMetric = "fulcrum_store_etcd_writes_total"

// isFulcrumEtcdWrites tells whether a metric name is fulcrum's own count
// of its writes to etcd.
func isFulcrumEtcdWrites(name string) bool { return name == fulcrumWritesMetric }

// sumSamples adds up the values of the samples, in Prometheus's text
// format, whose metric name match accepts, and returns the names found
// (in order of first appearance).
func sumSamples(text string, match func(string) bool) (sum float64, names []string, err error) {
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if j := strings.IndexAny(line, "{ "); j >= 0 {
			name, rest = line[:j], line[j:]
		}
		if !match(name) {
			continue
		}
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				return 0, nil, fmt.Errorf("cluster: metrics line %d: unterminated labels: %q", i+1, line)
			}
			rest = rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, nil, fmt.Errorf("cluster: metrics line %d: no value: %q", i+1, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, nil, fmt.Errorf("cluster: metrics line %d: value %q: %w", i+1, fields[0], err)
		}
		sum += v
		if len(names) == 0 || names[len(names)-1] != name {
			names = append(names, name)
		}
	}
	return sum, names, nil
}

// scrape reads url (a /metrics endpoint), with the admin token when token
// is set.
func scrape(ctx context.Context, hc *http.Client, url, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("cluster: scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("cluster: scrape %s: status %d", url, resp.StatusCode)
	}
	return string(b), nil
}

// etcdProposals is the largest count of committed proposals among the
// members (each member commits every proposal; a member that lags has
// fewer).
func etcdProposals(ctx context.Context, hc *http.Client, ms []*etcdMember) (float64, error) {
	var most float64
	for _, m := range ms {
		text, err := scrape(ctx, hc, m.clientURL+"/metrics", "")
		if err != nil {
			return 0, err
		}
		v, names, err := sumSamples(text, func(n string) bool { return n == etcdProposalsMetric })
		if err != nil {
			return 0, err
		}
		if len(names) == 0 {
			return 0, fmt.Errorf("cluster: etcd member %s has no %s", m.name, etcdProposalsMetric)
		}
		most = max(most, v)
	}
	return most, nil
}

// fulcrumEtcdWrites is the sum over the instances of fulcrum's own count
// of etcd writes, and the metric names it found; none found: no such
// metric in this fulcrum.
func fulcrumEtcdWrites(ctx context.Context, hc *http.Client, ins []*instance) (float64, []string, error) {
	var sum float64
	var names []string
	for _, in := range ins {
		text, err := scrape(ctx, hc, in.admin+"/metrics", adminToken)
		if err != nil {
			return 0, nil, err
		}
		v, ns, err := sumSamples(text, isFulcrumEtcdWrites)
		if err != nil {
			return 0, nil, err
		}
		sum += v
		if len(names) == 0 {
			names = ns
		}
	}
	return sum, names, nil
}
