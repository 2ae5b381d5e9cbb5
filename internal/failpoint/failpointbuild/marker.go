package failpointbuild

import (
	"bufio"
	"bytes"
	"fmt"
	"go/token"
	"strings"
)

// markerPrefix starts a gofail marker line (after indentation).
const markerPrefix = "// gofail:"

// killCode is the one code line a marker may carry.
const killCode = "failpoint.Kill()"

// Marker is one failpoint of the source.
type Marker struct {
	// Name is the failpoint's name, the one GOFAIL_FAILPOINTS sets.
	Name string
	// File is the file's path (as given to parseMarkers), Line the
	// marker's line (1-based).
	File string
	Line int
	// Kill reports whether the marker carries the failpoint.Kill() line
	// (otherwise it only evaluates its terms, e.g. sleep).
	Kill bool
}

// String is "name (file:line)".
func (m Marker) String() string { return fmt.Sprintf("%s (%s:%d)", m.Name, m.File, m.Line) }

// parseMarkers returns the markers of one Go file, checking fulcrum's
// convention (package failpoint's doc): a header line
//
//	// gofail: var NAME struct{}
//
// with NAME a Go identifier, followed by at most one comment line, which
// must be "// failpoint.Kill()", and then by a line that is not a comment
// (gofail would take any further comment line for code). Anything else
// starting with "// gofail:" is an error naming file and line.
func parseMarkers(file string, src []byte) ([]Marker, error) {
	var out []Marker
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), len(src)+1)
	line := 0
	var open *Marker // the marker whose code lines are being read
	codeLines := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if open != nil {
			if strings.HasPrefix(text, "//") {
				codeLines++
				code := strings.TrimSpace(strings.TrimPrefix(text, "//"))
				if codeLines > 1 || code != killCode {
					return nil, fmt.Errorf("failpointbuild: %s:%d: failpoint %s: comment line %q after the marker, gofail would take it for code: a marker is followed by at most one line, %q, then by code or a blank line", file, line, open.Name, text, "// "+killCode)
				}
				open.Kill = true
				continue
			}
			out = append(out, *open)
			open = nil
		}
		if !strings.HasPrefix(text, markerPrefix) {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(text, markerPrefix))
		if len(fields) != 3 || fields[0] != "var" || fields[2] != "struct{}" || !token.IsIdentifier(fields[1]) {
			return nil, fmt.Errorf("failpointbuild: %s:%d: malformed failpoint marker %q, want %q with NAME a Go identifier", file, line, text, markerPrefix+" var NAME struct{}")
		}
		open = &Marker{Name: fields[1], File: file, Line: line}
		codeLines = 0
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failpointbuild: %s: %w", file, err)
	}
	if open != nil {
		return nil, fmt.Errorf("failpointbuild: %s:%d: failpoint %s ends the file, it must precede a statement", file, open.Line, open.Name)
	}
	return out, nil
}

// checkUnique fails when two markers share a name (gofail's runtime
// panics at start-up on a name registered twice).
func checkUnique(ms []Marker) error {
	seen := make(map[string]Marker, len(ms))
	for _, m := range ms {
		if prev, ok := seen[m.Name]; ok {
			return fmt.Errorf("failpointbuild: failpoint name %s used twice, at %s:%d and %s:%d: names are unique in the module", m.Name, prev.File, prev.Line, m.File, m.Line)
		}
		seen[m.Name] = m
	}
	return nil
}
