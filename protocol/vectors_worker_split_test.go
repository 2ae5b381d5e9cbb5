package protocol_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/vectortest"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// workerSplitCase is one case of testdata/worker_split.json.
type workerSplitCase struct {
	Name         string         `json:"name"`
	Doc          string         `json:"doc"`
	Client       string         `json:"client"`
	ClientRepeat int            `json:"client_repeat"`
	FNV1a64      string         `json:"fnv1a64"`
	Workers      map[string]int `json:"workers"`
}

// TestVectorsWorkerSplit checks ClientHash and WorkerOf against every
// client id of testdata/worker_split.json.
func TestVectorsWorkerSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range vectortest.Load[workerSplitCase](t, "worker_split") {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			id := tc.Client
			if tc.ClientRepeat > 0 {
				id = strings.Repeat(id, tc.ClientRepeat)
			}
			if len(id) > protocol.MaxClientIDLength {
				t.Fatalf("the id is %d bytes, longer than any client's", len(id))
			}
			want, err := strconv.ParseUint(tc.FNV1a64, 16, 64)
			if err != nil || len(tc.FNV1a64) != 16 {
				t.Fatalf("fnv1a64 %q: must be 16 hex digits", tc.FNV1a64)
			}
			if got := protocol.ClientHash(id); got != want {
				t.Errorf("ClientHash = %016x, want %016x", got, want)
			}
			if len(tc.Workers) == 0 {
				t.Fatal("no worker counts")
			}
			for n, w := range tc.Workers {
				count, err := strconv.Atoi(n)
				if err != nil || count < 1 {
					t.Fatalf("worker count %q: must be a whole number >= 1", n)
				}
				if got := protocol.WorkerOf(id, count); got != w {
					t.Errorf("WorkerOf(id, %d) = %d, want %d", count, got, w)
				}
			}
		})
	}
}
