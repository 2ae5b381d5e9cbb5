package ctl

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Cluster returns GET /v1/cluster. raw is the API's JSON answer.
func (c *Client) Cluster(ctx context.Context) (cl protocol.Cluster, raw []byte, err error) {
	_, raw, err = c.do(ctx, http.MethodGet, "/v1/cluster", nil, nil, &cl)
	return cl, raw, err
}

// PrintCluster writes the instances (one line each, the answering one
// marked *), the leader of each group, and etcd's endpoints.
func PrintCluster(w io.Writer, c protocol.Cluster) error {
	switch c.Mode {
	case protocol.ClusterModeSingle:
		fmt.Fprintf(w, "single node %s (no store.etcd: no other instances)\n\n", c.Instance)
	default:
		fmt.Fprintf(w, "cluster of %d instance(s), as %s sees it\n\n", len(c.Instances), c.Instance)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "INSTANCE\tADMIN URL\tSTARTED\tVERSION\tFRONT DOORS")
	for _, in := range c.Instances {
		name := in.Name
		if in.Self {
			name += " *"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, dash(in.AdminURL), started(in.Started), dash(in.Version), frontDoors(in.FrontDoors))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(c.Leaders) > 0 {
		fmt.Fprintln(w)
		tw = newTable(w)
		fmt.Fprintln(tw, "GROUP\tLEADER")
		groups := make([]string, 0, len(c.Leaders))
		for g := range c.Leaders {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		for _, g := range groups {
			fmt.Fprintf(tw, "%s\t%s\n", g, c.Leaders[g])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if c.Etcd == nil {
		return nil
	}
	fmt.Fprintf(w, "\netcd (prefix %s)\n", c.Etcd.Prefix)
	tw = newTable(w)
	fmt.Fprintln(tw, "ENDPOINT\tREACHABLE\tLEADER\tVERSION\tDB SIZE\tERROR")
	for _, ep := range c.Etcd.Endpoints {
		size := "-"
		switch {
		case ep.DBSize >= 1<<20:
			size = fmt.Sprintf("%.1f MiB", float64(ep.DBSize)/(1<<20))
		case ep.DBSize > 0:
			size = fmt.Sprintf("%d KiB", (ep.DBSize+1023)/1024)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ep.Endpoint, yesNo(ep.Reachable), yesNo(ep.Leader), dash(ep.Version), size, dash(ep.Error))
	}
	return tw.Flush()
}

// frontDoors lists an instance's front doors, group=address or
// group: error, sorted by group.
func frontDoors(fd map[string]protocol.FrontDoorBinding) string {
	if len(fd) == 0 {
		return "-"
	}
	groups := make([]string, 0, len(fd))
	for g := range fd {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		if b := fd[g]; b.Address != "" {
			parts = append(parts, g+"="+b.Address)
		} else {
			parts = append(parts, g+" (not listening: "+b.Error+")")
		}
	}
	return strings.Join(parts, " ")
}

func started(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
