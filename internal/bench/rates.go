package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// RateList is a flag of call rates (effectiveness's --rates, albl's
// --rates-i, ...): comma-separated, shown without trailing zeros. It
// implements pflag.Value.
type RateList []float64

// String implements pflag.Value.
func (l *RateList) String() string { return strings.Join(FormatRates(*l), ",") }

// Type implements pflag.Value.
func (l *RateList) Type() string { return "rates" }

// Set replaces the list (a flag given twice keeps the last).
func (l *RateList) Set(s string) error {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return fmt.Errorf("%q is not a rate", f)
		}
		out = append(out, r)
	}
	*l = out
	return nil
}

// FormatRates formats rates without trailing zeros.
func FormatRates(rs []float64) []string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strconv.FormatFloat(r, 'f', -1, 64)
	}
	return parts
}
