// Package ctl is the admin API's Go client, used by "fulcrum ctl": one
// method per route, errors as *APIError carrying the API's code, message
// and field, and the tables ctl prints.
package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// DefaultAdmin is the admin API's default base URL.
const DefaultAdmin = "http://127.0.0.1:7070"

// Client calls one balancer's admin API. Safe for concurrent use.
type Client struct {
	// Base is the admin API's base URL, e.g. http://127.0.0.1:7070.
	Base string
	// Token is sent as "Authorization: Bearer <token>" when not empty.
	Token string
	// HTTP is the client used; one with a 30 s timeout when nil.
	HTTP *http.Client
}

// New returns a client for the admin API at base.
func New(base, token string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("ctl: admin URL %q must be an http:// or https:// URL such as %s", base, DefaultAdmin)
	}
	return &Client{Base: strings.TrimRight(base, "/"), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}, nil
}

// APIError is an error answer of the admin API.
type APIError struct {
	// Status is the HTTP status.
	Status     int    `json:"-"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Field      string `json:"field,omitempty"`
	Allowed    string `json:"allowed,omitempty"`
	ExistingID string `json:"existing_id,omitempty"`
	// Revision is the group's current revision on revision_mismatch.
	Revision *int64 `json:"revision,omitempty"`
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Field != "" && !strings.HasPrefix(e.Message, e.Field+":") {
		fmt.Fprintf(&b, " (field %s", e.Field)
		if e.Allowed != "" && !strings.Contains(e.Message, e.Allowed) {
			fmt.Fprintf(&b, ": %s", e.Allowed)
		}
		b.WriteString(")")
	}
	if e.ExistingID != "" && !strings.Contains(e.Message, e.ExistingID) {
		fmt.Fprintf(&b, " (existing replica %s)", e.ExistingID)
	}
	fmt.Fprintf(&b, " [%d %s]", e.Status, e.Code)
	return b.String()
}

// do sends a request with an optional JSON body and decodes a JSON answer
// into out (when not nil). It returns the raw answer body too.
func (c *Client) do(ctx context.Context, method, path string, hdr http.Header, in, out any) (int, []byte, error) {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return 0, nil, fmt.Errorf("ctl: encode request: %w", err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return 0, nil, fmt.Errorf("ctl: %w", err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("cannot reach the admin API at %s: %w", c.Base, unwrapURLError(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("ctl: read answer of %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		var eb struct {
			Error *APIError `json:"error"`
		}
		if json.Unmarshal(raw, &eb) != nil || eb.Error == nil {
			return resp.StatusCode, raw, &APIError{Status: resp.StatusCode, Code: "http", Message: fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(raw)))}
		}
		eb.Error.Status = resp.StatusCode
		return resp.StatusCode, raw, eb.Error
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, raw, fmt.Errorf("ctl: decode answer of %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, raw, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func groupPath(name string) string { return "/v1/groups/" + url.PathEscape(name) }

func replicaPath(group, id string) string {
	return groupPath(group) + "/replicas/" + url.PathEscape(id)
}

// Groups lists every group. raw is the API's JSON answer.
func (c *Client) Groups(ctx context.Context) (groups []protocol.GroupStatus, raw []byte, err error) {
	var out struct {
		Groups []protocol.GroupStatus `json:"groups"`
	}
	_, raw, err = c.do(ctx, http.MethodGet, "/v1/groups", nil, nil, &out)
	return out.Groups, raw, err
}

// Group returns one group's status.
func (c *Client) Group(ctx context.Context, name string) (st protocol.GroupStatus, raw []byte, err error) {
	_, raw, err = c.do(ctx, http.MethodGet, groupPath(name), nil, nil, &st)
	return st, raw, err
}

// PutGroup creates or replaces a group; body is the group's settings
// (protocol.Group or its JSON form). With createOnly an existing group is
// an error (412 group_exists). created reports a new group.
func (c *Client) PutGroup(ctx context.Context, name string, body any, createOnly bool) (st protocol.GroupStatus, created bool, raw []byte, err error) {
	var hdr http.Header
	if createOnly {
		hdr = http.Header{"If-None-Match": {"*"}}
	}
	status, raw, err := c.do(ctx, http.MethodPut, groupPath(name), hdr, body, &st)
	return st, status == http.StatusCreated, raw, err
}

// PutGroupIf replaces group name if it is at revision ifMatch (its ETag;
// 0: whatever its revision, as PutGroup does); a group at another
// revision is an *APIError with code revision_mismatch and the current
// Revision.
func (c *Client) PutGroupIf(ctx context.Context, name string, body any, ifMatch int64) (st protocol.GroupStatus, created bool, raw []byte, err error) {
	status, raw, err := c.do(ctx, http.MethodPut, groupPath(name), ifMatchHeader(ifMatch), body, &st)
	return st, status == http.StatusCreated, raw, err
}

// PatchGroup changes strategy, params or binding.
func (c *Client) PatchGroup(ctx context.Context, name string, p protocol.GroupPatch) (st protocol.GroupStatus, raw []byte, err error) {
	return c.PatchGroupIf(ctx, name, p, 0)
}

// PatchGroupIf is PatchGroup if the group is at revision ifMatch (0: any).
func (c *Client) PatchGroupIf(ctx context.Context, name string, p protocol.GroupPatch, ifMatch int64) (st protocol.GroupStatus, raw []byte, err error) {
	_, raw, err = c.do(ctx, http.MethodPatch, groupPath(name), ifMatchHeader(ifMatch), p, &st)
	return st, raw, err
}

// DeleteGroup deletes a group.
func (c *Client) DeleteGroup(ctx context.Context, name string) error {
	return c.DeleteGroupIf(ctx, name, 0)
}

// DeleteGroupIf is DeleteGroup if the group is at revision ifMatch (0:
// any).
func (c *Client) DeleteGroupIf(ctx context.Context, name string, ifMatch int64) error {
	_, _, err := c.do(ctx, http.MethodDelete, groupPath(name), ifMatchHeader(ifMatch), nil, nil)
	return err
}

// ifMatchHeader is the If-Match header of revision rev (none for 0).
func ifMatchHeader(rev int64) http.Header {
	if rev == 0 {
		return nil
	}
	return http.Header{"If-Match": {`"` + strconv.FormatInt(rev, 10) + `"`}}
}

// Register adds a replica. created is false when reg.Replace took over an
// existing registration.
func (c *Client) Register(ctx context.Context, group string, reg protocol.Registration) (out protocol.Registered, created bool, raw []byte, err error) {
	status, raw, err := c.do(ctx, http.MethodPost, groupPath(group)+"/replicas", nil, reg, &out)
	return out, status == http.StatusCreated, raw, err
}

// ReplicaState is the answer of Drain, Activate and Remove.
type ReplicaState struct {
	Group string `json:"group"`
	ID    string `json:"id"`
	State string `json:"state"`
	// Blocked is the address Remove with block blocked.
	Blocked string `json:"blocked,omitempty"`
}

// Drain stops new bindings to a replica.
func (c *Client) Drain(ctx context.Context, group, id string) (st ReplicaState, raw []byte, err error) {
	_, raw, err = c.do(ctx, http.MethodPost, replicaPath(group, id)+"/drain", nil, nil, &st)
	return st, raw, err
}

// Activate undoes a drain.
func (c *Client) Activate(ctx context.Context, group, id string) (st ReplicaState, raw []byte, err error) {
	_, raw, err = c.do(ctx, http.MethodPost, replicaPath(group, id)+"/activate", nil, nil, &st)
	return st, raw, err
}

// Remove drains a replica and removes it once idle. With block its
// address is blocked first, so that its monitor cannot register it again
// until Unblock.
func (c *Client) Remove(ctx context.Context, group, id string, block bool) (st ReplicaState, raw []byte, err error) {
	path := replicaPath(group, id)
	if block {
		path += "?block=true"
	}
	_, raw, err = c.do(ctx, http.MethodDelete, path, nil, nil, &st)
	return st, raw, err
}

// BlockState is the answer of Unblock.
type BlockState struct {
	Group   string `json:"group"`
	Address string `json:"address"`
	Blocked bool   `json:"blocked"`
}

// Unblock lifts the block of address in group.
func (c *Client) Unblock(ctx context.Context, group, address string) (st BlockState, raw []byte, err error) {
	_, raw, err = c.do(ctx, http.MethodDelete, groupPath(group)+"/blocks?address="+url.QueryEscape(address), nil, nil, &st)
	return st, raw, err
}
