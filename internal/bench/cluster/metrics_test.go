package cluster

import (
	"slices"
	"strings"
	"testing"
)

const sampleMetrics = `# HELP etcd_server_proposals_committed_total The total number of consensus proposals committed.
# TYPE etcd_server_proposals_committed_total gauge
etcd_server_proposals_committed_total 1234
etcd_server_proposals_applied_total 1230
# TYPE fulcrum_store_etcd_writes_total counter
fulcrum_store_etcd_writes_total{op="put"} 10
fulcrum_store_etcd_writes_total{op="txn",note="a } brace"} 5.5
fulcrum_store_etcd_writes_total{op="delete"} 2 1700000000000
fulcrum_store_etcd_request_seconds_count 99
`

func TestSumSamples(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		match func(string) bool
		sum   float64
		names []string
	}{
		{"etcd proposals", func(n string) bool { return n == etcdProposalsMetric }, 1234, []string{etcdProposalsMetric}},
		{"fulcrum's writes, labels and a timestamp", isFulcrumEtcdWrites, 17.5, []string{fulcrumWritesMetric}},
		{"absent", func(n string) bool { return n == "nothing" }, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sum, names, err := sumSamples(sampleMetrics, tc.match)
			if err != nil {
				t.Fatal(err)
			}
			if sum != tc.sum || !slices.Equal(names, tc.names) {
				t.Errorf("sum %v names %v, want %v %v", sum, names, tc.sum, tc.names)
			}
		})
	}
}

func TestSumSamplesErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, text, want string }{
		{"no value", "etcd_server_proposals_committed_total\n", "line 1: no value"},
		{"bad value", "etcd_server_proposals_committed_total lots\n", `line 1: value "lots"`},
		{"open labels", "# c\netcd_server_proposals_committed_total{a=\"b\" 3\n", "line 2: unterminated labels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := sumSamples(tc.text, func(n string) bool { return n == etcdProposalsMetric })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestIsFulcrumEtcdWrites(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"fulcrum_store_etcd_writes_total":          true,
		"fulcrum_store_etcd_writes_created":        false,
		"fulcrum_store_etcd_request_seconds_count": false,
		"etcd_server_proposals_committed_total":    false,
	} {
		if got := isFulcrumEtcdWrites(name); got != want {
			t.Errorf("isFulcrumEtcdWrites(%q) = %v, want %v", name, got, want)
		}
	}
}
