package replagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// DefaultMaxBatch bounds the body of one POST …/log/replies: the admin API
// takes 6 × the group's max_payload (plus 64 KiB), 6 MiB with the default
// max_payload.
const DefaultMaxBatch = 6 * DefaultMaxPayload

// AdminClient talks to the balancer's admin API for a replica of a group:
// it posts replies and applied reports, and fetches checkpoints from peer
// agents. Safe for concurrent use.
type AdminClient struct {
	// Group is the group's name.
	Group string
	// Token returns the replica's token, false while it has none.
	Token func() (string, bool)
	// Client makes the requests to the admin API; it should have a
	// timeout. Default: a client with a 10 s timeout.
	Client *http.Client
	// MaxBatch bounds the body of one POST of replies, default
	// DefaultMaxBatch: 6 × the group's max_payload. A reply that is
	// larger alone is posted alone (and refused).
	MaxBatch int
	// PeerClient takes checkpoints from peer agents (bounded by the
	// caller's context). Default: a client without a timeout.
	PeerClient *http.Client
	// OutcallClient posts outgoing calls (bounded by the caller's
	// context: a callee may take longer than Client's timeout). Default:
	// a client without a timeout.
	OutcallClient *http.Client
}

func (c *AdminClient) client() *http.Client {
	if c.Client == nil {
		return defaultAdminClient
	}
	return c.Client
}

var defaultAdminClient = &http.Client{Timeout: defaultCallTimeout}

// PostReplies posts replies to the admin API at base, as few batches as
// MaxBatch allows, in order.
func (c *AdminClient) PostReplies(ctx context.Context, base string, replies []protocol.ReplicaReply) error {
	maxBatch := c.MaxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	const head, tail = `{"replies":[`, `]}`
	body := []byte(head)
	n := 0
	for _, r := range replies {
		enc, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("replagent: encode the reply to %d: %w", r.Position, err)
		}
		if n > 0 && len(body)+1+len(enc)+len(tail) > maxBatch {
			if err := c.postBody(ctx, base, "/log/replies", append(body, tail...)); err != nil {
				return err
			}
			body, n = []byte(head), 0
		}
		if n > 0 {
			body = append(body, ',')
		}
		body = append(body, enc...)
		n++
	}
	if n == 0 {
		return nil
	}
	return c.postBody(ctx, base, "/log/replies", append(body, tail...))
}

// PostApplied posts an applied report to the admin API at base.
func (c *AdminClient) PostApplied(ctx context.Context, base string, r protocol.AppliedReport) error {
	return c.post(ctx, base, "/log/applied", r)
}

func (c *AdminClient) post(ctx context.Context, base, route string, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("replagent: POST %s: %w", route, err)
	}
	return c.postBody(ctx, base, route, data)
}

// postBody posts data (JSON) to the group's route at base.
func (c *AdminClient) postBody(ctx context.Context, base, route string, data []byte) error {
	tok, ok := c.Token()
	if !ok {
		return fmt.Errorf("replagent: POST %s: not registered yet", route)
	}
	u := base + "/v1/groups/" + url.PathEscape(c.Group) + route
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("replagent: POST %s: %w", u, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := c.client().Do(req)
	if err != nil {
		return fmt.Errorf("replagent: POST %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("replagent: POST %s answered %d: %s", u, resp.StatusCode, excerpt(resp.Body))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return nil
}

// maxOutcallAnswer bounds the answer to POST …/outcalls: the balancer
// keeps a callee's reply body up to 16 MiB, base64 in JSON.
const maxOutcallAnswer = 24 << 20

// PostOutcall posts one copy of an outgoing call to the admin API at base,
// POST /v1/groups/{group}/outcalls, and returns the balancer's answer: the
// callee's reply (status 502 with Error when it could not be reached). An
// error means this instance gave no answer (try the next).
func (c *AdminClient) PostOutcall(ctx context.Context, base string, oc protocol.Outcall) (protocol.OutcallReply, error) {
	data, err := json.Marshal(oc)
	if err != nil {
		return protocol.OutcallReply{}, fmt.Errorf("replagent: outcall %s: %w", oc.Key, err)
	}
	tok, ok := c.Token()
	if !ok {
		return protocol.OutcallReply{}, fmt.Errorf("replagent: outcall %s: not registered yet", oc.Key)
	}
	u := base + "/v1/groups/" + url.PathEscape(c.Group) + "/outcalls"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return protocol.OutcallReply{}, fmt.Errorf("replagent: POST %s: %w", u, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	hc := c.OutcallClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return protocol.OutcallReply{}, fmt.Errorf("replagent: POST %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return protocol.OutcallReply{}, fmt.Errorf("replagent: POST %s answered %d: %s", u, resp.StatusCode, excerpt(resp.Body))
	}
	var reply protocol.OutcallReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxOutcallAnswer)).Decode(&reply); err != nil {
		return protocol.OutcallReply{}, fmt.Errorf("replagent: POST %s: decoding the answer: %w", u, err)
	}
	return reply, nil
}

// Checkpoint fetches a checkpoint from the peer agent: GET
// {peer.Address}/fulcrum/replication/checkpoint → the state and the
// position it is at (Fulcrum-Position).
func (c *AdminClient) Checkpoint(ctx context.Context, peer protocol.LogPeer, maxState int64) ([]byte, uint64, error) {
	u := peer.Address + protocol.CheckpointPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("replagent: checkpoint from %s: %w", peer.ID, err)
	}
	hc := c.PeerClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("replagent: checkpoint from %s: %w", peer.ID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("replagent: checkpoint from %s: GET %s answered %d: %s", peer.ID, u, resp.StatusCode, excerpt(resp.Body))
	}
	pos, err := strconv.ParseUint(resp.Header.Get(protocol.HeaderPosition), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("replagent: checkpoint from %s: header %s %q: must be a decimal position", peer.ID, protocol.HeaderPosition, resp.Header.Get(protocol.HeaderPosition))
	}
	state, err := io.ReadAll(io.LimitReader(resp.Body, maxState+1))
	if err != nil {
		return nil, 0, fmt.Errorf("replagent: checkpoint from %s: %w", peer.ID, err)
	}
	if int64(len(state)) > maxState {
		return nil, 0, fmt.Errorf("replagent: checkpoint from %s: more than %d bytes", peer.ID, maxState)
	}
	return state, pos, nil
}
