package replagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestAdminClientPostsRepliesInBatchesWithinTheBound(t *testing.T) {
	t.Parallel()
	const maxBatch = 10_000
	var mu sync.Mutex
	var sizes []int
	var got []protocol.ReplicaReply
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/groups/g/log/replies" || r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("POST %s with %q, %q", r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"))
		}
		body, _ := io.ReadAll(r.Body)
		var b protocol.ReplyBatch
		if err := json.NewDecoder(bytes.NewReader(body)).Decode(&b); err != nil {
			t.Errorf("batch: %v", err)
		}
		mu.Lock()
		sizes = append(sizes, len(body))
		got = append(got, b.Replies...)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c := &replagent.AdminClient{Group: "g", Token: func() (string, bool) { return "tok", true }, MaxBatch: maxBatch}
	var sent []protocol.ReplicaReply
	for pos := uint64(1); pos <= 40; pos++ {
		n := 1000
		if pos == 17 {
			n = 3 * maxBatch // alone, above the bound
		}
		sent = append(sent, protocol.ReplicaReply{Position: pos, Status: 200, Header: http.Header{"Content-Type": {"text/plain"}}, Body: bytes.Repeat([]byte{byte(pos)}, n)})
	}
	if err := c.PostReplies(context.Background(), srv.URL, sent); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(sent) {
		t.Fatalf("%d replies arrived, want %d", len(got), len(sent))
	}
	for i := range sent {
		if got[i].Position != sent[i].Position || !bytes.Equal(got[i].Body, sent[i].Body) || got[i].Header.Get("Content-Type") != "text/plain" {
			t.Fatalf("reply %d arrived as position %d (%d bytes), want position %d in order, intact", i, got[i].Position, len(got[i].Body), sent[i].Position)
		}
	}
	over := 0
	for _, n := range sizes {
		if n > maxBatch {
			over++
		}
	}
	if over != 1 || len(sizes) < 5 {
		t.Fatalf("batch sizes %v: want several batches, only the one holding the oversized reply above %d", sizes, maxBatch)
	}
}
