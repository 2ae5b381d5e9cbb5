package python

import "math"

// Row is one arm's figures over the run, as results.json lists them.
type Row struct {
	Name string `json:"name"`
	// Replica is the replica process the arm calls: plain,
	// plain-control, monitored or client (direct's and bound's).
	Replica string `json:"replica"`
	// Client is what calls it: "httpx" or "httpx+BindingTransport".
	Client string `json:"client"`
	Rounds int    `json:"rounds"`
	// Calls succeeded and Errors failed over every round.
	Calls  int64 `json:"calls"`
	Errors int64 `json:"errors"`
	// ThroughputRPS and the latencies are medians over the rounds of each
	// round's figure (closed loop, one caller).
	ThroughputRPS Num `json:"throughput_rps"`
	LatencyMeanUS Num `json:"latency_mean_us"`
	LatencyP50US  Num `json:"latency_p50_us"`
	LatencyP99US  Num `json:"latency_p99_us"`
	// ReplicaCPUUSPerCall is the replica process's CPU time per call over
	// every round (null when /proc could not be read).
	ReplicaCPUUSPerCall Num    `json:"replica_cpu_us_per_call"`
	FirstError          string `json:"first_error,omitempty"`
}

// rowsOf summarises each arm over rounds, in Arms' order.
func rowsOf(rounds []Round) []Row {
	rows := make([]Row, 0, len(Arms))
	for _, arm := range Arms {
		row := Row{Name: arm, Replica: replicaName(arm), Client: "httpx", Rounds: len(rounds)}
		if arm == ArmBound {
			row.Client = "httpx+BindingTransport"
		}
		var rps, mean, p50, p99 []Num
		cpuSum, cpuCalls := 0.0, int64(0)
		cpuKnown := len(rounds) > 0
		for _, rd := range rounds {
			m, ok := rd[arm]
			if !ok {
				continue
			}
			row.Calls += m.Calls
			row.Errors += m.Errors
			if row.FirstError == "" {
				row.FirstError = m.FirstError
			}
			rps = append(rps, ratio(float64(m.Calls), m.ElapsedS))
			mean, p50, p99 = append(mean, Num(m.MeanUS)), append(p50, Num(m.P50US)), append(p99, Num(m.P99US))
			if math.IsNaN(m.ReplicaCPUUS) {
				cpuKnown = false
			}
			n := m.Calls + m.Errors
			cpuSum += m.ReplicaCPUUS * float64(n)
			cpuCalls += n
		}
		row.ThroughputRPS, row.LatencyMeanUS = medianFinite(rps), medianFinite(mean)
		row.LatencyP50US, row.LatencyP99US = medianFinite(p50), medianFinite(p99)
		row.ReplicaCPUUSPerCall = Num(math.NaN())
		if cpuKnown && cpuCalls > 0 {
			row.ReplicaCPUUSPerCall = Num(cpuSum / float64(cpuCalls))
		}
		rows = append(rows, row)
	}
	return rows
}

// replicaName is the replica process an arm calls.
func replicaName(arm string) string {
	if arm == ArmDirect || arm == ArmBound {
		return ReplicaClient
	}
	return arm
}
