package dashboard_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/replog"
	"github.com/fulcrum-lb/fulcrum/internal/replog/boltlog"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestDashboardDivergenceInBrowser shows a replicated group's divergent
// replicas in the page. The replicas speak the agents' protocol to the
// real admin API (the log stream, replies, applied reports), each with
// its own token, over real sockets; the replies are scripted so that one
// differs. With two replicas the one that differs from the first reply is
// marked "diverged at 1, alert only" and stays; its applied position shows
// how far it is behind. With three, the odd one is ejected: the mark says
// so, and stays (in the group's facts) once its row is gone, while its
// address is blocked; when the block is lifted and the address registers
// again, the mark goes.
func TestDashboardDivergenceInBrowser(t *testing.T) {
	needChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := boltlog.Open(filepath.Join(t.TempDir(), boltlog.FileName), boltlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	admin, b := serveBalancer(t, balancer.Options{ReplicatedLog: func(group string, lim replog.Limits, ttl time.Duration) (replog.Log, error) {
		return db.Group(group, boltlog.GroupOptions{Limits: lim, SessionTTL: ttl})
	}})
	st, _, err := b.PutGroup(protocol.Group{Name: "counter", Protocol: protocol.ProtocolHTTP, FrontDoor: "127.0.0.1:0",
		Binding: protocol.BindingReplicated, ReportInterval: protocol.Duration(200 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	good := scriptedReplica(t, b, "counter")
	odd := scriptedReplica(t, b, "counter")
	entries := logEntries(ctx, t, admin.url, "counter", good.Token)

	p := page{t, browser(ctx, t)}
	p.open(admin.url)
	sec := `document.querySelector('section[data-group="counter"]')`
	row := func(id string) string { return sec + `.querySelector('tr[data-replica="` + id + `"]')` }
	p.poll("two replica rows", sec+` && `+sec+`.querySelectorAll("tr[data-replica]").length === 2`)
	p.poll("a single node", `document.getElementById("cluster-mode").textContent === "Single node" && document.querySelectorAll("#instances li").length === 0 && !`+sec+`.querySelector('[data-fact="leader"]')`)

	// Position 1: the odd replica's reply differs from the first.
	answered := call(ctx, t, st.Advertise, 1)
	pos := next(ctx, t, entries)
	admin.replicaPost(t, good.Token, "/v1/groups/counter/log/replies", protocol.ReplyBatch{Replies: []protocol.ReplicaReply{{Position: pos, Status: 200, Body: []byte(`{"value":1}`)}}})
	admin.replicaPost(t, odd.Token, "/v1/groups/counter/log/replies", protocol.ReplyBatch{Replies: []protocol.ReplicaReply{{Position: pos, Status: 200, Body: []byte(`{"value":9}`)}}})
	admin.replicaPost(t, good.Token, "/v1/groups/counter/log/applied", protocol.AppliedReport{Applied: pos})
	if got := <-answered; got != `{"value":1}` {
		t.Fatalf("the client got %q, want the first reply", got)
	}
	p.poll("the odd replica marked, alert only", row(odd.ID)+`?.querySelector(".diverged")?.textContent === "diverged at `+fmt.Sprint(pos)+`, alert only (no majority)" && `+row(odd.ID)+`?.dataset.state === "active"`)
	p.poll("the other not", row(good.ID)+` && !`+row(good.ID)+`.querySelector(".diverged")`)
	p.poll("applied positions and lag", row(good.ID)+`?.querySelector(".applied .pos")?.textContent === "`+fmt.Sprint(pos)+`" && `+
		row(good.ID)+`.querySelector(".lag").textContent === "up to date" && `+row(odd.ID)+`?.querySelector(".lag")?.textContent === "1 behind"`)

	p.screenshot("dashboard-diverged.png")

	// Position 2 among three: the odd one is ejected.
	third := scriptedReplica(t, b, "counter")
	p.poll("three replica rows", sec+`.querySelectorAll("tr[data-replica]").length === 3`)
	answered = call(ctx, t, st.Advertise, 2)
	pos = next(ctx, t, entries)
	for _, r := range []scripted{good, third, odd} {
		body := `{"value":2}`
		if r.ID == odd.ID {
			body = `{"value":10}`
		}
		admin.replicaPost(t, r.Token, "/v1/groups/counter/log/replies", protocol.ReplyBatch{Replies: []protocol.ReplicaReply{{Position: pos, Status: 200, Body: []byte(body)}}})
	}
	<-answered
	ejected := fmt.Sprintf("diverged at %d, ejected (address blocked)", pos)
	p.poll("the ejection is logged", `Array.from(document.querySelectorAll("#log li")).some(li => li.textContent.includes("replica `+odd.ID+` diverged at position `+fmt.Sprint(pos)+`, ejected"))`)
	p.poll("the ejected replica's row goes", `!`+row(odd.ID))
	p.poll("the ejected replica's row goes, its mark stays in the facts", `!`+row(odd.ID)+` && `+sec+`.querySelector('[data-fact="diverged"] dd')?.textContent.includes("`+odd.ID+` (`+odd.Address+`) `+ejected+`")`)
	p.poll("the ejection is logged", `Array.from(document.querySelectorAll("#log li")).some(li => li.textContent.includes("replica `+odd.ID+` diverged at position `+fmt.Sprint(pos)+`, ejected"))`)

	// The block lifted, the address registers again: the mark goes.
	if code, msg := admin.do(t, "DELETE", "/v1/groups/counter/blocks?address="+url.QueryEscape(odd.Address), "", nil); msg != "" {
		t.Fatalf("unblock: %d %s", code, msg)
	}
	again, _, err := b.Register("counter", protocol.Registration{Address: odd.Address})
	if err != nil {
		t.Fatal(err)
	}
	p.poll("re-admitted: no mark", row(again.ID)+` && !`+sec+`.querySelector('[data-fact="diverged"]') && !`+sec+`.querySelector(".diverged")`)
}

// scriptedReplica registers a replica of group at a real listener that
// answers every request (health checks) with 200; its log traffic is the
// test's to send, with its token.
func scriptedReplica(t *testing.T, b *balancer.Balancer, group string) scripted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := "http://" + ln.Addr().String()
	reg, _, err := b.Register(group, protocol.Registration{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	return scripted{reg, addr}
}

// scripted is a registered replica and its address.
type scripted struct {
	protocol.Registered
	Address string
}

// logEntries follows group's log stream as the replica with token and
// sends the position of every entry.
func logEntries(ctx context.Context, t *testing.T, adminURL, group, token string) <-chan uint64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", adminURL+"/v1/groups/"+group+"/log?from=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET the log stream: %d", resp.StatusCode)
	}
	out := make(chan uint64)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev protocol.LogEvent
			if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != protocol.LogEventEntry {
				continue
			}
			select {
			case out <- ev.Position:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func next(ctx context.Context, t *testing.T, entries <-chan uint64) uint64 {
	t.Helper()
	select {
	case pos := <-entries:
		return pos
	case <-ctx.Done():
		t.Fatal("no log entry in time")
		return 0
	}
}

// call sends a POST through the replicated group's front door as call
// seq of one session, and sends its answer's body.
func call(ctx context.Context, t *testing.T, frontDoor string, seq int) <-chan string {
	t.Helper()
	out := make(chan string, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, "POST", frontDoor+"/increment", bytes.NewReader([]byte("+1")))
		if err != nil {
			out <- err.Error()
			return
		}
		req.Header.Set(protocol.HeaderSession, "dashboard-client")
		req.Header.Set(protocol.HeaderSequence, fmt.Sprint(seq))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- err.Error()
			return
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		out <- buf.String()
	}()
	return out
}

// replicaPost POSTs body as JSON to a log route with a replica's token
// and wants 204.
func (a *adminAPI) replicaPost(t *testing.T, token, path string, body any) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", a.url+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST %s: %d, want 204", path, resp.StatusCode)
	}
}
