package ordered

import (
	"errors"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/internal/giop"
)

// Encode encodes req, header included. When req is GIOP 1.0 or 1.1 and its
// header changed length since its body was encoded by other than a multiple
// of 8 (giop.ErrBodyMisaligned), the requesting_principal is padded with
// zero octets (one to seven) until the body keeps its alignment; req's
// Principal is left as it was.
func Encode(req *giop.Request) ([]byte, error) {
	b, err := giop.EncodeMessage(req)
	if err == nil || !errors.Is(err, giop.ErrBodyMisaligned) || req.Version == giop.V12 {
		return b, err
	}
	padded := *req
	for n := 1; n < 8; n++ {
		padded.Principal = append(append(make([]byte, 0, len(req.Principal)+n), req.Principal...), make([]byte, n)...)
		b, err := giop.EncodeMessage(&padded)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, giop.ErrBodyMisaligned) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("ordered: GIOP %v request %q: no principal padding keeps the body aligned: %w", req.Version, req.Operation, err)
}
