package eft

import (
	"fmt"
	"strconv"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// Row is one setting of results.json: mean makespans (ms) over its
// graphs, normalised to round-robin's, and EFT's improvements.
type Row struct {
	Name          string  `json:"name"`
	StatefulRatio float64 `json:"stateful_ratio"`
	StateGroups   int     `json:"state_groups"`
	Tasks         int     `json:"tasks"`
	Graphs        int     `json:"graphs"`
	EFTMS         float64 `json:"eft_makespan_ms"`
	ETTMS         float64 `json:"ett_makespan_ms"`
	RoundRobinMS  float64 `json:"round_robin_makespan_ms"`
	// EFTNorm and ETTNorm are the mean makespans over round-robin's
	// (Fig. 17/18's bars).
	EFTNorm float64 `json:"eft_normalised"`
	ETTNorm float64 `json:"ett_normalised"`
	// EFTVsRR and EFTVsETT are 1 − EFT/RR and 1 − EFT/ETT (mean
	// makespans): the paper's "improvement".
	EFTVsRR  float64 `json:"eft_vs_round_robin"`
	EFTVsETT float64 `json:"eft_vs_ett"`
	// EFTBeatsETT is the share of graphs on which EFT's makespan is below
	// ETT's.
	EFTBeatsETT float64 `json:"eft_beats_ett_share"`
	// BoundMS is the mean lower bound (max of the longest computation path
	// and the work over the servers); HeadroomRR and HeadroomETT are
	// 1 − bound/RR and 1 − bound/ETT: the most any schedule could gain.
	BoundMS float64 `json:"lower_bound_ms"`
	// PathBound is the share of graphs whose bound is the longest path.
	PathBound   float64 `json:"path_bound_share"`
	HeadroomRR  float64 `json:"headroom_round_robin"`
	HeadroomETT float64 `json:"headroom_ett"`
	// TargetVsRR and TargetVsETT are the paper's lower bounds for this
	// stateful ratio (0 when it gives none); Met says whether both hold.
	TargetVsRR  float64 `json:"target_vs_round_robin,omitempty"`
	TargetVsETT float64 `json:"target_vs_ett,omitempty"`
	Met         *bool   `json:"met,omitempty"`
}

// paperTargets are the lower ends of the improvements Chen et al. report
// (§V): by stateful ratio, over round-robin and over ETT.
var paperTargets = map[float64][2]float64{0.25: {0.0931, 0.0276}, 0.5: {0.08, 0.05}}

func rowOf(s setting, runs []graphRun) Row {
	r := Row{
		Name:          fmt.Sprintf("stateful %s, %d groups, v=%d", pct(s.ratio), s.groups, s.tasks),
		StatefulRatio: s.ratio, StateGroups: s.groups, Tasks: s.tasks, Graphs: len(runs),
	}
	var sum [3]float64
	beats, paths, bound := 0, 0, 0.0
	for _, run := range runs {
		if run.pathBound {
			paths++
		}
		for p := range sum {
			sum[p] += run.makespan[p]
		}
		if run.makespan[0] < run.makespan[1] {
			beats++
		}
		bound += run.bound
	}
	n := float64(len(runs))
	r.EFTMS, r.ETTMS, r.RoundRobinMS, r.BoundMS = sum[0]/n, sum[1]/n, sum[2]/n, bound/n
	r.EFTNorm, r.ETTNorm = r.EFTMS/r.RoundRobinMS, r.ETTMS/r.RoundRobinMS
	r.EFTVsRR, r.EFTVsETT = 1-r.EFTMS/r.RoundRobinMS, 1-r.EFTMS/r.ETTMS
	r.EFTBeatsETT = float64(beats) / n
	r.PathBound = float64(paths) / n
	r.HeadroomRR, r.HeadroomETT = 1-r.BoundMS/r.RoundRobinMS, 1-r.BoundMS/r.ETTMS
	if t, ok := paperTargets[s.ratio]; ok {
		r.TargetVsRR, r.TargetVsETT = t[0], t[1]
		met := r.EFTVsRR >= t[0] && r.EFTVsETT >= t[1]
		r.Met = &met
	}
	return r
}

func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', -1, 64) + "%" }

func pct2(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }

// why explains a missed target from the simulation's own figures.
func why(r Row) string {
	var out []string
	if r.EFTVsRR < r.TargetVsRR {
		if r.HeadroomRR < r.TargetVsRR {
			out = append(out, fmt.Sprintf("round-robin is only %s above the lower bound (%.1f ms: max of the longest computation path and the work over the servers), so no schedule can be %s better", pct2(r.HeadroomRR), r.BoundMS, pct2(r.TargetVsRR)))
		} else {
			o := fmt.Sprintf("EFT takes %s of round-robin's %s headroom over the lower bound", pct2(r.EFTVsRR), pct2(r.HeadroomRR))
			if r.PathBound >= 0.5 {
				o += fmt.Sprintf(" — on %.1f%% of the graphs the bound is the longest path: narrow graphs whose makespan is that path with its communication and sharing, which no placement removes", 100*r.PathBound)
			}
			out = append(out, o)
		}
	}
	if r.EFTVsETT < r.TargetVsETT {
		if r.HeadroomETT < r.TargetVsETT {
			out = append(out, fmt.Sprintf("ETT is only %s above the lower bound, so no schedule can be %s better", pct2(r.HeadroomETT), pct2(r.TargetVsETT)))
		} else {
			out = append(out, fmt.Sprintf("EFT takes %s of ETT's %s headroom and beats it on %s of the graphs", pct2(r.EFTVsETT), pct2(r.HeadroomETT), fmt.Sprintf("%.1f%%", 100*r.EFTBeatsETT)))
		}
	}
	s := ""
	for i, o := range out {
		if i > 0 {
			s += "; "
		}
		s += o
	}
	return s
}

func (e *EFT) report(env *bench.Env, rows []Row, elapsed time.Duration) (*bench.Report, error) {
	rep := bench.NewReport("fulcrum bench eft: EFT work-flow scheduling (Chen et al. §V, Fig. 17/18)")
	for _, r := range rows {
		if r.Met == nil {
			continue
		}
		detail := fmt.Sprintf("EFT %s better than round-robin (≥ %s), %s better than ETT (≥ %s)", pct2(r.EFTVsRR), pct2(r.TargetVsRR), pct2(r.EFTVsETT), pct2(r.TargetVsETT))
		if !*r.Met {
			detail += ": " + why(r)
		}
		rep.Target(r.Name, *r.Met, "%s", detail)
	}
	rep.Heading("The simulation")
	rep.Para("%d random work-flows per setting from Table I's generator (shape %v, out-degree %d–%d, CCR %v; computation costs uniform in [1, %d] ms; "+
		"levels ~ normal with mean √v/s, tasks per level ~ normal with mean √v·s, each with a standard deviation of a quarter of its mean; "+
		"stateful tasks drawn uniformly, spread over the state groups; %s of the edges between two tasks of one state group are timeout edges of %s — the paper gives neither), "+
		"seed %d. Each graph runs under EFT (Algorithm 2, driven online through its Core), ETT and round-robin on %d simulated servers running at most k = %d tasks at once, "+
		"n tasks computing on a server each at 1/n of their speed, a task receiving its predecessors' data (c(i,j), nothing from the same server, as in HEFT) after it starts; "+
		"ETT and round-robin keep stateful tasks on their state group's server through a session table that expires at timeout edges. "+
		"Bars are mean makespans over round-robin's mean. Simulating took %s on %d CPUs.",
		e.Graphs, float64(tableIShape), tableIMinOut, tableIMaxOut, tableICCR, 2*meanCostMS, pct(timeoutShare), defaultTimeout, e.Seed, e.Servers, e.K,
		elapsed.Round(time.Millisecond), env.Machine.CPUs)
	for _, ratio := range e.Ratios {
		var sub []Row
		for _, r := range rows {
			if r.StatefulRatio == ratio {
				sub = append(sub, r)
			}
		}
		fig := "fig17"
		if ratio != 0.25 {
			fig = "fig18"
		}
		if ratio != 0.25 && ratio != 0.5 {
			fig = "stateful-" + strconv.FormatFloat(100*ratio, 'f', -1, 64)
		}
		rep.Heading(fmt.Sprintf("%s stateful tasks", pct(ratio)))
		var cells [][]string
		for _, r := range sub {
			st := "—"
			if r.Met != nil {
				st = "missed"
				if *r.Met {
					st = "met"
				}
			}
			cells = append(cells, []string{
				strconv.Itoa(r.StateGroups), strconv.Itoa(r.Tasks), fmt.Sprintf("%.3f", r.EFTNorm), fmt.Sprintf("%.3f", r.ETTNorm),
				pct2(r.EFTVsRR), pct2(r.EFTVsETT), pct2(r.HeadroomRR), pct2(r.HeadroomETT), fmt.Sprintf("%.1f%%", 100*r.PathBound), fmt.Sprintf("%.1f%%", 100*r.EFTBeatsETT), st,
			})
		}
		rep.Table([]string{"groups", "v", "EFT/RR", "ETT/RR", "EFT vs RR", "EFT vs ETT", "RR headroom", "ETT headroom", "path-bound graphs", "EFT < ETT on", "target"}, cells)
		for _, grp := range e.Groups {
			var cats []string
			series := []bench.Series{{Name: "EFT"}, {Name: "ETT"}, {Name: "round-robin"}}
			for _, r := range sub {
				if r.StateGroups != grp {
					continue
				}
				cats = append(cats, "v="+strconv.Itoa(r.Tasks))
				series[0].Values = append(series[0].Values, r.EFTNorm)
				series[1].Values = append(series[1].Values, r.ETTNorm)
				series[2].Values = append(series[2].Values, 1)
			}
			name := fmt.Sprintf("%s-%dgroups.png", fig, grp)
			if err := env.BarChart(name, bench.Axes{
				Title: fmt.Sprintf("Makespan over round-robin's: %s stateful tasks, %d state groups", pct(ratio), grp), X: "tasks per work-flow", Y: "makespan / round-robin's",
			}, cats, series); err != nil {
				return nil, err
			}
			rep.Image(fmt.Sprintf("makespans over round-robin's, %s stateful, %d groups", pct(ratio), grp), name)
		}
	}
	return rep, nil
}
