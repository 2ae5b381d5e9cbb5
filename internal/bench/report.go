package bench

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// TargetStatus is whether a run met a target.
type TargetStatus string

// The statuses of a target.
const (
	Met     TargetStatus = "met"
	Missed  TargetStatus = "missed"
	Unknown TargetStatus = "not measured"
)

// Target is one of an experiment's targets and what this run says about it.
type Target struct {
	Name   string       `json:"name"`
	Status TargetStatus `json:"status"`
	Detail string       `json:"detail"`
}

// Report is report.md: a list of Markdown blocks under a title, with the
// targets summarised at the top. Not safe for concurrent use.
type Report struct {
	title   string
	blocks  []string
	targets []Target
}

// NewReport returns an empty report titled title.
func NewReport(title string) *Report { return &Report{title: title} }

// Heading adds a second-level heading.
func (r *Report) Heading(text string) { r.blocks = append(r.blocks, "## "+text) }

// Para adds a paragraph.
func (r *Report) Para(format string, args ...any) {
	r.blocks = append(r.blocks, fmt.Sprintf(format, args...))
}

// Table adds a table; cells are used as they are (Markdown).
func (r *Report) Table(header []string, rows [][]string) {
	var sb strings.Builder
	sb.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		sb.WriteString("---|")
	}
	for _, row := range rows {
		sb.WriteString("\n| " + strings.Join(row, " | ") + " |")
	}
	r.blocks = append(r.blocks, sb.String())
}

// Image adds a picture (a PNG in the output directory).
func (r *Report) Image(alt, file string) {
	r.blocks = append(r.blocks, fmt.Sprintf("![%s](%s)", alt, file))
}

// Target records a target's status; met says whether the run met it.
func (r *Report) Target(name string, met bool, format string, args ...any) {
	st := Missed
	if met {
		st = Met
	}
	r.targets = append(r.targets, Target{Name: name, Status: st, Detail: fmt.Sprintf(format, args...)})
}

// TargetUnknown records a target this run could not measure (a
// configuration skipped or failed) and why.
func (r *Report) TargetUnknown(name, format string, args ...any) {
	r.targets = append(r.targets, Target{Name: name, Status: Unknown, Detail: fmt.Sprintf(format, args...)})
}

// Targets are the targets recorded so far.
func (r *Report) Targets() []Target { return r.targets }

// Markdown renders the report of res.
func (r *Report) Markdown(res *Results) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# %s\n\n", r.title)
	fmt.Fprintf(&sb, "- command: `%s`\n", res.Command)
	fmt.Fprintf(&sb, "- started: %s\n", res.Started.Format(time.RFC3339))
	m := res.Machine
	fmt.Fprintf(&sb, "- machine: %d CPUs, %s, %s, HAProxy %s, NGINX %s\n", m.CPUs, m.OS, m.Go, orMissing(m.HAProxy), orMissing(m.NGINX))
	if len(r.targets) > 0 {
		sb.WriteString("\n## Targets\n\n| target | status | detail |\n|---|---|---|\n")
		for _, t := range r.targets {
			st := string(t.Status)
			switch t.Status {
			case Met:
				st = "**met**"
			case Missed:
				st = "**missed**"
			}
			fmt.Fprintf(&sb, "| %s | %s | %s |\n", t.Name, st, t.Detail)
		}
	}
	for _, b := range r.blocks {
		sb.WriteString("\n" + b + "\n")
	}
	return sb.String()
}

// WriteFile writes the report of res to path.
func (r *Report) WriteFile(path string, res *Results) error {
	return os.WriteFile(path, []byte(r.Markdown(res)), 0o644)
}

func orMissing(v string) string {
	if v == "" {
		return "not installed"
	}
	return v
}
