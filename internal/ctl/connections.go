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

// MaxConnectionsPage is the largest page of a group's connection table the
// admin API gives (its limit's range is [1, MaxConnectionsPage]).
const MaxConnectionsPage = 10_000

// Connections returns a page of group's connection table: the connections
// with ids above after, at most limit of them (0: the API's default,
// 100). raw is the API's JSON answer.
func (c *Client) Connections(ctx context.Context, group string, after uint64, limit int) (list protocol.ConnectionList, raw []byte, err error) {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if after != 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	path := groupPath(group) + "/connections"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	_, raw, err = c.do(ctx, http.MethodGet, path, nil, nil, &list)
	return list, raw, err
}

// AllConnections pages through group's connection table from after to
// its end, pageSize connections a request, and returns them as one list
// (Next 0; Total as the last page counted). A connection that ends while
// the pages are read is absent; one opened meanwhile appears when its id
// is above the pages already read.
func (c *Client) AllConnections(ctx context.Context, group string, after uint64, pageSize int) (protocol.ConnectionList, error) {
	all := protocol.ConnectionList{Connections: []protocol.Connection{}}
	for {
		page, _, err := c.Connections(ctx, group, after, pageSize)
		if err != nil {
			return protocol.ConnectionList{}, err
		}
		all.Connections = append(all.Connections, page.Connections...)
		all.Total = page.Total
		if page.Next == 0 || page.Next <= after {
			return all, nil
		}
		after = page.Next
	}
}

// PrintConnections writes a page of group's connection table, one line
// per connection, and a footer with the total and, when there is a next
// page, the --after that reads it.
func PrintConnections(w io.Writer, group string, list protocol.ConnectionList) error {
	if list.Total == 0 {
		_, err := fmt.Fprintf(w, "no connections open in group %s\n", group)
		return err
	}
	if len(list.Connections) > 0 {
		tw := newTable(w)
		fmt.Fprintln(tw, "ID\tCLIENT\tREPLICA\tADDRESS\tBYTES IN\tBYTES OUT\tAGE\tIDLE")
		for _, c := range list.Connections {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", c.ID, c.Client, c.Replica, c.Address, c.BytesIn, c.BytesOut, millis(c.AgeMS), millis(c.IdleMS))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "%d of %d connection(s) open in group %s", len(list.Connections), list.Total, group)
	if list.Next != 0 {
		fmt.Fprintf(w, "; next page: --after %d (or --all)", list.Next)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// millis is a duration in milliseconds, rounded to the second from one
// second on.
func millis(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= time.Second {
		d = d.Round(time.Second)
	}
	return d.String()
}
