package tcp

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// judge holds fulcrum's rows to the targets against HAProxy's of the same
// run: for small exchanges at each connection count and for bulk
// transfers, throughput at least HAProxy's and p99 at most HAProxy's;
// new connections per second at least HAProxy's; memory per idle
// connection measured for fulcrum, HAProxy and NGINX. A part where
// fulcrum or HAProxy did not run is not measured; fulcrum's operations
// failing misses the target whatever the figures.
func judge(rows []Row) []bench.Target {
	var out []bench.Target
	find := func(name, part string, conns int) *Row {
		for i := range rows {
			r := &rows[i]
			if r.Name == name && r.Part == part && (conns == 0 || r.Connections == conns) {
				return r
			}
		}
		return nil
	}
	perf := func(label, part string, conns int, unit string, withP99 bool) {
		f, h := find(ArmFulcrum, part, conns), find(ArmHAProxy, part, conns)
		names := []string{label + ": throughput ≥ 1.0× HAProxy"}
		if withP99 {
			names = append(names, label+": p99 ≤ HAProxy's")
		}
		if why := unmeasured(f, h); why != "" {
			for _, n := range names {
				out = append(out, bench.Target{Name: n, Status: bench.Unknown, Detail: why})
			}
			return
		}
		fT, hT := f.ThroughputRPS, h.ThroughputRPS
		if unit == "MiB/s" {
			fT, hT = f.ThroughputMiBs, h.ThroughputMiBs
		}
		errNote := ""
		if f.Errors > 0 {
			errNote = fmt.Sprintf("; fulcrum had %d failed operations (first: %s)", f.Errors, f.FirstError)
		}
		prec := 0
		if unit == "MiB/s" {
			prec = 1
		}
		out = append(out, bench.Target{Name: names[0], Status: status(fT >= hT && f.Errors == 0),
			Detail: fmt.Sprintf("fulcrum %.*f %s, HAProxy %.*f %s (%.2f×)%s", prec, fT, unit, prec, hT, unit, ratio(fT, hT), errNote)})
		if withP99 {
			out = append(out, bench.Target{Name: names[1], Status: status(f.P99 <= h.P99 && f.Errors == 0),
				Detail: fmt.Sprintf("fulcrum %.0f µs, HAProxy %.0f µs (%.2f×)%s", f.P99, h.P99, ratio(f.P99, h.P99), errNote)})
		}
	}
	for _, n := range ExchangeConnections {
		perf(fmt.Sprintf("64 B exchanges, %d connections", n), PartExchange, n, "exchanges/s", true)
	}
	perf("1 MiB transfers", PartBulk, 0, "MiB/s", true)
	perf("new connections per second", PartConnect, 0, "connections/s", false)

	const memName = "memory per idle connection reported beside HAProxy's and NGINX's"
	detail, missing := "", ""
	for _, name := range []string{ArmFulcrum, ArmHAProxy, ArmNGINX} {
		r := find(name, PartIdle, 0)
		switch {
		case r == nil:
			missing = name + " has no idle row"
		case r.Memory == nil:
			if missing == "" {
				missing = fmt.Sprintf("%s not measured: %s%s", name, r.Skipped, r.Note)
			}
		default:
			if detail != "" {
				detail += "; "
			}
			detail += fmt.Sprintf("%s %.1f KiB and %.2f descriptors per connection at %d", name,
				r.Memory.RSSPerConnectionBytes/1024, r.Memory.FDsPerConnection, r.Connections)
		}
	}
	if missing != "" {
		out = append(out, bench.Target{Name: memName, Status: bench.Unknown, Detail: missing})
	} else {
		out = append(out, bench.Target{Name: memName, Status: bench.Met, Detail: detail})
	}
	return out
}

// unmeasured says why fulcrum's row f cannot be compared with HAProxy's
// h, "" when it can.
func unmeasured(f, h *Row) string {
	switch {
	case f == nil || f.Skipped != "":
		return "fulcrum not run" + skippedWhy(f)
	case h == nil || h.Skipped != "":
		return "HAProxy not run" + skippedWhy(h)
	case f.Figures == nil || h.Figures == nil:
		return "no figures"
	case f.Count == 0:
		return fmt.Sprintf("no fulcrum operation succeeded (%d failed; first: %s)", f.Errors, f.FirstError)
	}
	return ""
}

func skippedWhy(r *Row) string {
	if r == nil || r.Skipped == "" {
		return ""
	}
	return ": " + r.Skipped
}

func status(met bool) bench.TargetStatus {
	if met {
		return bench.Met
	}
	return bench.Missed
}
