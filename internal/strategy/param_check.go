package strategy

import (
	"fmt"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// floatParamIn returns a *ParamError unless lo <= v <= hi.
func floatParamIn(strategy, field string, v, lo, hi float64) error {
	if v >= lo && v <= hi {
		return nil
	}
	return &ParamError{Strategy: strategy, Field: field, Value: v, Allowed: fmt.Sprintf("must be in [%v,%v]", lo, hi)}
}

// intParamIn returns a *ParamError unless lo <= v <= hi.
func intParamIn(strategy, field string, v, lo, hi int) error {
	if v >= lo && v <= hi {
		return nil
	}
	return &ParamError{Strategy: strategy, Field: field, Value: v, Allowed: fmt.Sprintf("must be in [%d,%d]", lo, hi)}
}

// durationParamIn returns a *ParamError unless lo <= v <= hi.
func durationParamIn(strategy, field string, v protocol.Duration, lo, hi time.Duration) error {
	if v.D() >= lo && v.D() <= hi {
		return nil
	}
	return &ParamError{Strategy: strategy, Field: field, Value: v.String(), Allowed: fmt.Sprintf("must be in [%v,%v]", lo, hi)}
}
