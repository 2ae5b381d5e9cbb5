package stats

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// recorderJSON is a Recorder on the wire: the histogram in HdrHistogram's
// V2 compressed encoding (base64 text, readable by the other HdrHistogram
// implementations), the exact moments beside it.
type recorderJSON struct {
	HDR     string  `json:"hdr"`
	N       int64   `json:"n"`
	Mean    float64 `json:"mean_us"`
	M2      float64 `json:"m2_us2"`
	Min     float64 `json:"min_us"`
	Max     float64 `json:"max_us"`
	Clamped int64   `json:"clamped"`
}

// errBadRecorder prefixes every decoding failure.
var errBadRecorder = errors.New("stats: bad recorder encoding")

// MarshalJSON encodes everything r recorded, so that a recorder filled in
// another process can be decoded and merged exactly.
func (r *Recorder) MarshalJSON() ([]byte, error) {
	hdr, err := r.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("stats: encoding histogram: %w", err)
	}
	return json.Marshal(recorderJSON{HDR: string(hdr), N: r.n, Mean: r.mean, M2: r.m2, Min: r.min, Max: r.max, Clamped: r.clamped})
}

// UnmarshalJSON replaces r with a recorder encoded by MarshalJSON. It
// rejects a histogram of another range or precision, or whose count
// disagrees with the moments.
func (r *Recorder) UnmarshalJSON(b []byte) error {
	var w recorderJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("%w: %w", errBadRecorder, err)
	}
	h, err := decodeHistogram(w.HDR)
	if err != nil {
		return fmt.Errorf("%w: %w", errBadRecorder, err)
	}
	ref := newHistogram()
	switch {
	case h.LowestTrackableValue() != ref.LowestTrackableValue() || h.HighestTrackableValue() != ref.HighestTrackableValue() ||
		h.SignificantFigures() != ref.SignificantFigures():
		return fmt.Errorf("%w: histogram range [%d,%d]µs with %d digits, want [%d,%d]µs with %d", errBadRecorder,
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(),
			ref.LowestTrackableValue(), ref.HighestTrackableValue(), ref.SignificantFigures())
	case h.TotalCount() != w.N || w.N < 0 || w.Clamped < 0 || w.Clamped > w.N || w.M2 < 0:
		return fmt.Errorf("%w: histogram holds %d values, moments say %d", errBadRecorder, h.TotalCount(), w.N)
	}
	*r = Recorder{h: h, n: w.N, mean: w.Mean, m2: w.M2, min: w.Min, max: w.Max, clamped: w.Clamped}
	return nil
}

// decodeHistogram decodes the library's base64 V2 encoding. The decoder
// indexes its input without checking lengths, so its panics on malformed
// input are turned into errors.
func decodeHistogram(s string) (h *hdrhistogram.Histogram, err error) {
	if len(s) < 12 { // the 8-byte header in base64
		return nil, errors.New("histogram encoding too short")
	}
	defer func() {
		if p := recover(); p != nil {
			h, err = nil, fmt.Errorf("malformed histogram: %v", p)
		}
	}()
	return hdrhistogram.Decode([]byte(s))
}
