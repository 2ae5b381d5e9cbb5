package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// explicitWeights is the part of a file that tells a replica weight left
// out (nil: the default of 1) from one written as 0, which the decoded
// protocol.StaticReplica cannot.
type explicitWeights struct {
	Groups []struct {
		Replicas []struct {
			Weight *float64 `yaml:"weight"`
		} `yaml:"replicas"`
	} `yaml:"groups"`
}

// checkZeroWeights rejects a replica weight written as 0: a weight is in
// (0, 1000000], and only a weight left out means 1. Run it after checkTree,
// which has checked every weight is a number.
func checkZeroWeights(root *yaml.Node) []error {
	var ew explicitWeights
	if err := root.Decode(&ew); err != nil {
		return nil // the strict decode reports it
	}
	var errs []error
	for i, g := range ew.Groups {
		for j, r := range g.Replicas {
			if r.Weight != nil && *r.Weight == 0 {
				errs = append(errs, &protocol.FieldError{
					Field:   fmt.Sprintf("groups[%d].replicas[%d].weight", i, j),
					Value:   *r.Weight,
					Allowed: protocol.ZeroWeightAllowed,
				})
			}
		}
	}
	return errs
}
