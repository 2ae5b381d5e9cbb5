package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// RelayOptions configure NewRelayHandler.
type RelayOptions struct {
	CounterOptions
	// Next is the base URL of tier 3 (a counter, or a front door before
	// counters): the relay calls Next + "/increment". Required.
	Next string
	// Client makes the calls to Next (default http.DefaultClient). Give it
	// a transport with Proxy set to send them through an HTTP proxy
	// (fulcrum backend relay --proxy: the replica's agent).
	Client *http.Client
}

// ParseNextURL checks a relay's next tier: an http or https URL with a host
// and no query; a trailing slash is dropped. The error names the value and
// what is allowed.
func ParseNextURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("backend: next %q: must be an http:// or https:// base URL with a host and no query, such as http://127.0.0.1:9002", s)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// NewRelayHandler returns tier 2 of seed 001's test application over HTTP:
// POST /increment[?by=K] calls the next tier's POST /increment[?by=K], adds
// the value it answers to the relay's own counter c, and answers
//
//	{"value": own, "next": theirs}
//
// A failed call (transport error, a status other than 200, an answer
// without an integer value) answers 502 with the error and leaves c
// unchanged. GET /value, GET and PUT /fulcrum/state and GET /healthz are the
// counter's (NewCounterHandler), of c. Safe for concurrent use.
func NewRelayHandler(c *Counter, opts RelayOptions) (http.Handler, error) {
	next, err := ParseNextURL(opts.Next)
	if err != nil {
		return nil, err
	}
	hc := opts.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	co := opts.CounterOptions.withDefaults()
	mux := stateMux(c)
	mux.HandleFunc("POST /increment", func(w http.ResponseWriter, r *http.Request) {
		by, err := incrementBy(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_argument", "by", err.Error())
			return
		}
		s, err := co.stamp(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_argument", "header", err.Error())
			return
		}
		theirs, err := CallIncrement(r.Context(), hc, next, by)
		if err != nil {
			writeError(w, http.StatusBadGateway, "next_failed", "next", err.Error())
			return
		}
		st, err := c.Add(theirs, s)
		if err != nil {
			writeError(w, http.StatusConflict, "overflow", "next", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]int64{"value": st.Value, "next": theirs})
	})
	return mux, nil
}

// CallIncrement makes one POST base/increment?by=by with hc and returns the
// value answered. A status other than 200, or an answer without an integer
// value, is an error naming the URL.
func CallIncrement(ctx context.Context, hc *http.Client, base string, by int64) (int64, error) {
	u := base + "/increment"
	if by != 1 {
		u += "?by=" + strconv.FormatInt(by, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return 0, fmt.Errorf("backend: POST %s: %w", u, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("backend: POST %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("backend: POST %s: reading the answer: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("backend: POST %s answered %s: %.200s", u, resp.Status, body)
	}
	var v struct {
		Value *int64 `json:"value"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Value == nil {
		return 0, fmt.Errorf("backend: POST %s answered %.200q, want {\"value\": integer}", u, body)
	}
	return *v.Value, nil
}
