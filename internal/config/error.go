package config

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Problems an Error reports.
const (
	ProblemInvalid   = "invalid value"
	ProblemUnknown   = "unknown key"
	ProblemDuplicate = "duplicate key"
	ProblemSyntax    = "syntax error"
	ProblemRead      = "cannot read file"
)

// Error is one problem of a config file that fulcrum cannot use: where
// (file, line, column), which key, what is wrong with it and what is
// allowed. Load and Parse return them in Errors; `fulcrum serve` exits 2
// on any.
type Error struct {
	// File is the file name as given to Load or Parse.
	File string
	// Line and Column are 1-based; 0 when unknown.
	Line, Column int
	// Key is the dotted path of the key, such as "groups[0].health.timeout";
	// empty for problems of the whole file.
	Key string
	// Problem is one of the Problem constants, possibly followed by detail
	// (the parser's message for a syntax error).
	Problem string
	// Value is the offending value as written in the file, strings quoted;
	// empty when there is none (an unknown key, a syntax error).
	Value string
	// Allowed says what the key accepts.
	Allowed string
}

// Error reads like
//
//	fulcrum.yaml:7: groups[0].binding: invalid value "sometimes", must be one of: per-session, on-demand, per-request
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	if e.Value != "" {
		b.WriteString(" ")
		b.WriteString(e.Value)
	}
	if e.Allowed != "" {
		b.WriteString(", ")
		b.WriteString(e.Allowed)
	}
	return b.String()
}

// maxValueLen bounds a value quoted in an error message.
const maxValueLen = 80

// formatValue renders a value the way it appears in error messages:
// strings quoted, other values as printed, long ones cut.
func formatValue(v any) string {
	var s string
	switch v := v.(type) {
	case nil:
		return "(missing)"
	case string:
		s = fmt.Sprintf("%q", truncate(v))
	default:
		s = truncate(fmt.Sprint(v))
	}
	return s
}

// truncate cuts s to about maxValueLen bytes on a character boundary.
func truncate(s string) string {
	if len(s) <= maxValueLen {
		return s
	}
	i := maxValueLen
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// MaxReported bounds the errors Errors.Error prints; the rest are counted
// in a last line, "… and N more".
const MaxReported = 50

// Errors is every problem found in a config file, in line order (problems
// of the whole file, without a line, last). Load and Parse return it,
// never empty, as their only error type; errors.As finds its first *Error.
type Errors []*Error

// Error is one line per problem, at most MaxReported of them, then
// "… and N more".
func (es Errors) Error() string { return strings.Join(es.Lines(), "\n") }

// Lines is Error split into its lines.
func (es Errors) Lines() []string {
	n := min(len(es), MaxReported)
	out := make([]string, 0, n+1)
	for _, e := range es[:n] {
		out = append(out, e.Error())
	}
	if len(es) > n {
		out = append(out, fmt.Sprintf("… and %d more", len(es)-n))
	}
	return out
}

// Unwrap lets errors.As and errors.Is see each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
