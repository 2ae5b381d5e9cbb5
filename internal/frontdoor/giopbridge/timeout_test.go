package giopbridge_test

import (
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/giopbridge"
	"github.com/fulcrum-lb/fulcrum/internal/giop"
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
	"github.com/fulcrum-lb/fulcrum/internal/giop/ordered"
	"github.com/fulcrum-lb/fulcrum/internal/replhub"
)

// A call no replica answers within the request timeout gets TIMEOUT,
// COMPLETED_MAYBE: it is in the log. Once a replica applies it, the
// client's retry with the same FT_REQUEST gets its reply, and it ran once.
func TestTimeoutThenRetryGetsTheReply(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	r := newRig(t, rigOptions{bridge: giopbridge.Options{RequestTimeout: 300 * time.Millisecond}})
	// A live replica whose agent never streams.
	r.mu.Lock()
	r.live = append(r.live, replhub.Peer{ID: "ghost", Address: "agent-ghost"})
	r.mu.Unlock()
	ft := giop.ServiceContext{ID: ordered.ServiceFTRequest, Data: ordered.FTRequest{ClientID: "c", RetentionID: 1}.Encode(cdr.BigEndian)}
	c := r.dial(t)
	c.send(request(giop.V12, cdr.BigEndian, 1, groupKey, backend.OpIncrement, ft))
	if ex := sysex(t, c.reply()); ex.RepositoryID != giopbridge.RepoIDTimeout || ex.Completed != giop.CompletedMaybe {
		t.Fatalf("no answer: %v, want TIMEOUT, COMPLETED_MAYBE", ex)
	}
	a := r.startReplica(t, "a")
	r.waitIncrements(ctx, 1)
	c.send(request(giop.V12, cdr.BigEndian, 2, groupKey, backend.OpIncrement, ft))
	rep := c.reply()
	if rep.RequestID != 2 || longLong(t, rep) != 1 {
		t.Fatalf("retry: id %d value %d, want id 2 value 1", rep.RequestID, longLong(t, rep))
	}
	if st := a.counter.State(); st.Increments != 1 {
		t.Fatalf("%d increments, want 1", st.Increments)
	}
}
