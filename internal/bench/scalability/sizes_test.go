package scalability

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// TestScalabilitySizes: each size's defaults (the paper's, --quick's,
// --smoke's), and flags that override them.
func TestScalabilitySizes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		size      bench.Size
		calls     int
		processes []int
		callers   []int
		duration  time.Duration
	}{
		{bench.Full, 10_000, []int{1, 2, 4}, []int{1, 4, 16, 64}, 10 * time.Second},
		{bench.Quick, 2_000, []int{1, 2, 4}, []int{1, 4, 16, 64}, 2 * time.Second},
		{bench.Smoke, 20, []int{1, 2}, []int{1, 4}, 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.size.String(), func(t *testing.T) {
			t.Parallel()
			s := &Scalability{}
			if err := s.defaults(tt.size); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Sizes, []int{24, 240, 2400, 24000, 240000}) || s.PayloadCalls != tt.calls ||
				!slices.Equal(s.Processes, tt.processes) || !slices.Equal(s.Callers, tt.callers) || s.Duration != tt.duration {
				t.Errorf("defaults %+v, want sizes 24…240000, %d calls, processes %v, callers %v, %s", s, tt.calls, tt.processes, tt.callers, tt.duration)
			}
		})
	}

	s := &Scalability{}
	fs := pflag.NewFlagSet("scalability", pflag.ContinueOnError)
	s.AddFlags(fs)
	if err := fs.Parse([]string{"--sizes", "100,200", "--payload-calls", "7", "--processes", "3", "--callers", "2,5", "--duration", "1s"}); err != nil {
		t.Fatal(err)
	}
	if err := s.defaults(bench.Quick); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Sizes, []int{100, 200}) || s.PayloadCalls != 7 || !slices.Equal(s.Processes, []int{3}) ||
		!slices.Equal(s.Callers, []int{2, 5}) || s.Duration != time.Second {
		t.Errorf("flags did not override the --quick defaults: %+v", s)
	}
}

// TestScalabilityCheckNamesTheFlag: a value out of range is refused before
// anything starts, with the flag, the value and the range.
func TestScalabilityCheckNamesTheFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    Scalability
		want string
	}{
		{"size 0", Scalability{Sizes: []int{24, 0}}, "--sizes 0, must be in [1, 8388608]"},
		{"size above 8 MiB", Scalability{Sizes: []int{8<<20 + 1}}, "--sizes 8388609, must be in [1, 8388608]"},
		{"no processes", Scalability{Processes: []int{0}}, "--processes 0, must be in [1, 64]"},
		{"too many processes", Scalability{Processes: []int{65}}, "--processes 65, must be in [1, 64]"},
		{"too many callers", Scalability{Callers: []int{1, 4097}}, "--callers 4097, must be in [1, 4096]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.s.Check(bench.Quick)
			if err == nil || !strings.HasPrefix(err.Error(), "scalability: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check = %v, want %q", err, tt.want)
			}
		})
	}
	for _, max := range []Scalability{{Sizes: []int{1, 8 << 20}}, {Processes: []int{1, 64}}, {Callers: []int{1, 4096}}} {
		if err := max.Check(bench.Full); err != nil {
			t.Errorf("Check(%+v) = %v, want the bounds accepted", max, err)
		}
	}
}

func TestBounded(t *testing.T) {
	t.Parallel()
	r := ScalabilityRow{Figures: bench.Figures{Summary: stats.Summary{Mean: 123.4, P5: 50.2, P95: 300.6}}}
	if got := bounded(r); got != "123 [50, 301]" {
		t.Errorf("bounded = %q", got)
	}
	r.Skipped = "haproxy is not installed (apt-get install haproxy)"
	if got := bounded(r); got != "skipped" {
		t.Errorf("bounded of a skipped row = %q", got)
	}
}
