package tcp

import (
	"fmt"
	"strconv"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// armNames are the arms in the report's order.
var armNames = []string{ArmDirect, ArmFulcrum, ArmHAProxy, ArmNGINX}

// writeReport fills report with the targets, a table per part and the
// plots.
func writeReport(env *bench.Env, report *bench.Report, rows []Row, lim descriptorLimit) error {
	for _, t := range judge(rows) {
		switch t.Status {
		case bench.Unknown:
			report.TargetUnknown(t.Name, "%s", t.Detail)
		default:
			report.Target(t.Name, t.Status == bench.Met, "%s", t.Detail)
		}
	}
	report.Para("%d `fulcrum backend echo` replicas behind every arm (round robin per connection); direct connects to them in turn, the limit. "+
		"HAProxy runs `mode tcp`, `nbthread 2`, `option splice-auto`; NGINX its `stream` module, one worker; fulcrum a `protocol: tcp` group, round robin. "+
		"The load comes from closed-loop goroutines in the bench process, one per connection, one arm at a time; ratios (×) are against HAProxy in the same run. %s.",
		Replicas, lim.Note)

	report.Heading("64-byte exchanges")
	report.Para("Each connection sends 64 bytes and reads the 64 echoed back, again and again.")
	var ex [][]string
	for _, r := range rows {
		if r.Part == PartExchange {
			ex = append(ex, perfCells(r, "%.0f", r.throughput()))
		}
	}
	report.Table([]string{"arm", "connections", "exchanges/s", "p50 µs", "p99 µs", "errors", "× HAProxy (throughput, p99)"}, ex)
	report.Image("exchanges per second", "exchange_throughput.png")
	report.Image("p99 of an exchange", "exchange_p99.png")

	report.Heading("1 MiB transfers")
	report.Para("Each of %d connections sends 1 MiB and reads it back while sending, again and again; the latency is one transfer's.", BulkConnections)
	var bulk [][]string
	for _, r := range rows {
		if r.Part == PartBulk {
			bulk = append(bulk, perfCells(r, "%.1f", r.ThroughputMiBs))
		}
	}
	report.Table([]string{"arm", "connections", "MiB/s", "p50 µs", "p99 µs", "errors", "× HAProxy (throughput, p99)"}, bulk)

	report.Heading("New connections per second")
	report.Para("%d workers each connect, make one 64-byte exchange and close, again and again.", ConnectConnections)
	var conn [][]string
	for _, r := range rows {
		if r.Part == PartConnect {
			conn = append(conn, perfCells(r, "%.0f", r.throughput()))
		}
	}
	report.Table([]string{"arm", "workers", "connections/s", "p50 µs", "p99 µs", "errors", "× HAProxy (throughput, p99)"}, conn)
	report.Image("transfers and new connections", "bulk_connect.png")

	report.Heading("Memory per idle connection")
	report.Para("The balancer process's resident memory (VmRSS) and open descriptors before the idle connections were opened and with them open (each carried one byte there and back, so the balancer holds its connection to the replica too).")
	var idle [][]string
	for _, r := range rows {
		if r.Part != PartIdle {
			continue
		}
		switch {
		case r.Skipped != "":
			idle = append(idle, []string{r.Name, strconv.Itoa(r.Connections), "skipped: " + r.Skipped, "", "", "", ""})
		case r.Memory == nil:
			idle = append(idle, []string{r.Name, strconv.Itoa(r.Connections), r.Note, "", "", "", ""})
		default:
			m := r.Memory
			x := ""
			if r.VsHAProxy != nil {
				x = fmt.Sprintf("%.2f", r.VsHAProxy.RSSPerConnection)
			}
			idle = append(idle, []string{r.Name, strconv.Itoa(r.Connections),
				fmt.Sprintf("%.1f → %.1f", float64(m.RSSBeforeBytes)/(1<<20), float64(m.RSSBytes)/(1<<20)),
				fmt.Sprintf("%.2f", m.RSSPerConnectionBytes/1024),
				fmt.Sprintf("%d → %d", m.FDsBefore, m.FDs),
				fmt.Sprintf("%.2f", m.FDsPerConnection), x})
		}
	}
	report.Table([]string{"arm", "idle connections", "RSS MiB", "KiB per connection", "descriptors", "per connection", "× HAProxy (KiB)"}, idle)
	report.Image("memory per idle connection", "idle_memory.png")
	return plots(env, rows)
}

// throughput is the row's operations per second, 0 without figures.
func (r Row) throughput() float64 {
	if r.Figures == nil {
		return 0
	}
	return r.ThroughputRPS
}

// perfCells is a table row of a closed-loop part; throughput is shown
// with format.
func perfCells(r Row, format string, throughput float64) []string {
	if r.Skipped != "" {
		return []string{r.Name, strconv.Itoa(r.Connections), "skipped: " + r.Skipped, "", "", "", ""}
	}
	x := ""
	if r.VsHAProxy != nil {
		x = fmt.Sprintf("%.2f, %.2f", r.VsHAProxy.Throughput, r.VsHAProxy.P99)
	}
	errs := "0"
	if r.Errors > 0 {
		errs = fmt.Sprintf("%d (%s)", r.Errors, r.FirstError)
	}
	return []string{r.Name, strconv.Itoa(r.Connections), fmt.Sprintf(format, throughput),
		fmt.Sprintf("%.0f", r.P50), fmt.Sprintf("%.0f", r.P99), errs, x}
}

// plots draws the exchanges' throughput and p99 against connections, the
// bulk and new-connection throughputs, and the memory per idle
// connection.
func plots(env *bench.Env, rows []Row) error {
	var tput, p99 []bench.Line
	for _, name := range armNames {
		lt, lp := bench.Line{Name: name}, bench.Line{Name: name}
		for _, r := range rows {
			if r.Part == PartExchange && r.Name == name && r.Figures != nil {
				lt.X, lt.Y = append(lt.X, float64(r.Connections)), append(lt.Y, r.ThroughputRPS)
				lp.X, lp.Y = append(lp.X, float64(r.Connections)), append(lp.Y, r.P99)
			}
		}
		tput, p99 = append(tput, lt), append(p99, lp)
	}
	if err := env.LineChart("exchange_throughput.png", bench.Axes{Title: "64 B exchanges", X: "connections", Y: "exchanges/s", LogX: true}, tput); err != nil {
		return err
	}
	if err := env.LineChart("exchange_p99.png", bench.Axes{Title: "64 B exchanges: p99", X: "connections", Y: "p99 (µs)", LogX: true}, p99); err != nil {
		return err
	}
	value := func(part, name string, f func(Row) float64) float64 {
		for _, r := range rows {
			if r.Part == part && r.Name == name && r.Skipped == "" {
				return f(r)
			}
		}
		return 0
	}
	var bc, mem []bench.Series
	for _, name := range armNames {
		bc = append(bc, bench.Series{Name: name, Values: []float64{
			value(PartBulk, name, func(r Row) float64 { return r.ThroughputMiBs }),
			value(PartConnect, name, func(r Row) float64 { return r.throughput() / 10 }),
		}})
		if name != ArmDirect {
			mem = append(mem, bench.Series{Name: name, Values: []float64{
				value(PartIdle, name, func(r Row) float64 {
					if r.Memory == nil {
						return 0
					}
					return r.Memory.RSSPerConnectionBytes / 1024
				}),
			}})
		}
	}
	if err := env.BarChart("bulk_connect.png", bench.Axes{Title: "1 MiB transfers and new connections", Y: "MiB/s; connections/s ÷ 10"},
		[]string{"1 MiB transfers (MiB/s)", "new connections (/s ÷ 10)"}, bc); err != nil {
		return err
	}
	return env.BarChart("idle_memory.png", bench.Axes{Title: "memory per idle connection", Y: "KiB per connection"}, []string{"RSS per idle connection"}, mem)
}
