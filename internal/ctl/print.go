package ctl

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// PrintGroups writes one line per group.
func PrintGroups(w io.Writer, groups []protocol.GroupStatus) error {
	if len(groups) == 0 {
		_, err := fmt.Fprintln(w, "no groups (create one with \"fulcrum ctl create GROUP --front-door HOST:PORT\")")
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tPROTOCOL\tFRONT DOOR\tBINDING\tSTRATEGY\tREPLICAS\tSOURCE")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Name, g.Protocol, dash(frontDoor(g)), g.Binding, g.Strategy, replicaCount(g.Replicas), dash(g.Source))
	}
	return tw.Flush()
}

// frontDoor is what clients use: a GIOP group's corbaloc reference, or the
// advertise URL.
func frontDoor(g protocol.GroupStatus) string {
	if g.Reference != nil {
		return g.Reference.Corbaloc
	}
	return g.Advertise
}

// replicaCount is "<active>/<total> active".
func replicaCount(rs []protocol.ReplicaStatus) string {
	active := 0
	for _, r := range rs {
		if r.State == protocol.StateActive {
			active++
		}
	}
	return fmt.Sprintf("%d/%d active", active, len(rs))
}

// PrintStatus writes a group's settings and its replica table. Replica
// addresses longer than MaxAddressWidth (GIOP IORs run to hundreds of
// characters) are shortened to their first and last characters around an
// ellipsis unless wide is set.
func PrintStatus(w io.Writer, g protocol.GroupStatus, wide bool) error {
	listening := ""
	if g.Listening != "" {
		listening = " (listening on " + g.Listening + ")"
	}
	fmt.Fprintf(w, "group %s: %s, %s, strategy %s\n", g.Name, g.Protocol, g.Binding, g.Strategy)
	fmt.Fprintf(w, "  front door   %s%s\n", dash(g.Advertise), listening)
	if g.Reference != nil {
		fmt.Fprintf(w, "  corbaloc     %s\n", g.Reference.Corbaloc)
		fmt.Fprintf(w, "  ior          %s\n", g.Reference.IOR)
	}
	fmt.Fprintf(w, "  params       %s\n", FormatParams(g.Params))
	if len(g.Blocked) > 0 {
		fmt.Fprintf(w, "  blocked      %s\n", strings.Join(g.Blocked, " "))
	}
	fmt.Fprintf(w, "  report every %s\n", g.ReportInterval)
	if g.Revision != 0 {
		fmt.Fprintf(w, "  revision     %d (ETag \"%d\"; ctl set/apply/delete --if-match %d)\n", g.Revision, g.Revision, g.Revision)
	}
	if g.Warning != "" {
		fmt.Fprintf(w, "  warning      %s\n", g.Warning)
	}
	if len(g.Replicas) == 0 {
		_, err := fmt.Fprintln(w, "  no replicas (add one with \"fulcrum ctl add "+g.Name+" URL\")")
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tADDRESS\tSTATE\tWEIGHT\tLOAD\tEFFECTIVE\tADVISORY\tSHED\tREPORT AGE\tBINDINGS\tREBINDS\tPROXIED\tREDIRECTED\tFAILURES")
	for _, r := range g.Replicas {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n",
			r.ID, shortAddress(r.Address, wide), r.State, num(r.Weight), optNum(r.Load), optNum(r.EffectiveLoad),
			dash(r.Advisory), num(r.Shed), age(r.ReportAgeMS),
			r.Counters.Bindings, r.Counters.Rebinds, r.Counters.Proxied, r.Counters.Redirected, r.Counters.Failures)
	}
	return tw.Flush()
}

// MaxAddressWidth is the widest replica address PrintStatus prints whole
// in its table without wide.
const MaxAddressWidth = 48

// shortAddress is addr, or when longer than MaxAddressWidth and not wide,
// its first 28 and last 12 characters around "…": the IOR's type prefix and
// the end that tells replicas apart.
func shortAddress(addr string, wide bool) string {
	if wide || len(addr) <= MaxAddressWidth {
		return addr
	}
	return addr[:28] + "…" + addr[len(addr)-12:]
}

// FormatParams writes params as sorted key=value pairs, "-" when empty.
func FormatParams(p map[string]any) string {
	if len(p) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		var v string
		switch x := p[k].(type) {
		case string:
			v = x
		case float64:
			v = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			data, err := json.Marshal(x)
			if err != nil {
				data = []byte(fmt.Sprint(x))
			}
			v = string(data)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// num formats a figure with at most two decimals.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

func optNum(v *float64) string {
	if v == nil {
		return "-"
	}
	return num(*v)
}

func age(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return (time.Duration(*ms) * time.Millisecond).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
