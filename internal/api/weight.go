package api

import (
	"encoding/json"
	"fmt"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// A weight decoded into a float64 is 0 both when the body leaves it out
// (the default of 1) and when it says 0 (out of range). These read the
// body again with pointers to tell the two apart; the keys match as in
// the strict decode (case-insensitively).

// zeroWeight rejects a registration body whose weight is an explicit 0.
func zeroWeight(data []byte) *protocol.FieldError {
	var reg struct {
		Weight *float64 `json:"weight"`
	}
	if json.Unmarshal(data, &reg) == nil && isZero(reg.Weight) {
		return &protocol.FieldError{Field: "weight", Value: 0, Allowed: protocol.ZeroWeightAllowed}
	}
	return nil
}

// zeroReplicaWeight rejects a group body with a static replica whose
// weight is an explicit 0.
func zeroReplicaWeight(data []byte) *protocol.FieldError {
	var gs struct {
		Replicas []struct {
			Weight *float64 `json:"weight"`
		} `json:"replicas"`
	}
	if json.Unmarshal(data, &gs) != nil {
		return nil
	}
	for i, r := range gs.Replicas {
		if isZero(r.Weight) {
			return &protocol.FieldError{Field: fmt.Sprintf("replicas[%d].weight", i), Value: 0, Allowed: protocol.ZeroWeightAllowed}
		}
	}
	return nil
}

func isZero(w *float64) bool { return w != nil && *w == 0 }
