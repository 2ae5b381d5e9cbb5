package ctl

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Sessions returns a page of group's session table (GET
// /v1/groups/{name}/sessions): at most limit entries (0: the API's
// default) after the token after ("" from the start). raw is the API's
// JSON answer.
func (c *Client) Sessions(ctx context.Context, group string, limit int, after string) (l protocol.SessionList, raw []byte, err error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if after != "" {
		q.Set("after", after)
	}
	path := groupPath(group) + "/sessions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	_, raw, err = c.do(ctx, http.MethodGet, path, nil, nil, &l)
	return l, raw, err
}

// PrintSessions writes a page of a session table, one entry a line, with
// the entries' idle time and time left as of now.
func PrintSessions(w io.Writer, l protocol.SessionList, now time.Time) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "RULE\tKEY\tREPLICA\tCREATED\tIDLE\tEXPIRES IN")
	for _, s := range l.Sessions {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", s.Rule, s.Key, s.Replica, s.Created.UTC().Format(time.RFC3339),
			now.Sub(s.LastUsed).Round(time.Second), max(s.Expires.Sub(now), 0).Round(time.Second))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d entries", len(l.Sessions), l.Total)
	if err == nil && l.Next != "" {
		_, err = fmt.Fprintf(w, "; next page: --after %s", strconv.Quote(l.Next))
	}
	if err == nil {
		_, err = fmt.Fprintln(w)
	}
	return err
}
