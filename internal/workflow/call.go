package workflow

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
)

// maxDrainBytes is how much of an answer's body is read (and dropped) so
// that its connection can be used again.
const maxDrainBytes = 1 << 20

// do sends task t's call to server s and returns the HTTP status. The
// answer's body is dropped.
func (r *run) do(ctx context.Context, t, s int) (int, error) {
	c := r.plan.calls[t]
	if r.target.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.target.CallTimeout)
		defer cancel()
	}
	var body io.Reader
	if len(c.body) > 0 {
		body = bytes.NewReader(c.body)
	}
	base := strings.TrimSuffix(r.target.Replicas[s].URL.String(), "/")
	req, err := http.NewRequestWithContext(ctx, c.method, base+c.path, body)
	if err != nil {
		return 0, err
	}
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
	if err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, nil
}
