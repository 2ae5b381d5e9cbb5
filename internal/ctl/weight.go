package ctl

import (
	"fmt"

	"github.com/fulcrum-lb/fulcrum/protocol"
	"go.yaml.in/yaml/v3"
)

// zeroWeight refuses a replica weight written as 0 in a group file's
// document doc: decoded into a float64 it would be sent as no weight at
// all, the default of 1, while the balancer refuses an explicit 0.
func zeroWeight(doc *yaml.Node) error {
	type replicas struct {
		Replicas []struct {
			Weight *float64 `yaml:"weight"`
		} `yaml:"replicas"`
	}
	var f struct {
		replicas `yaml:",inline"`
		Groups   []replicas `yaml:"groups"`
	}
	if doc.Decode(&f) != nil {
		return nil // the strict decode reports it
	}
	groups := append([]replicas{f.replicas}, f.Groups...)
	for i, g := range groups {
		for j, r := range g.Replicas {
			if r.Weight != nil && *r.Weight == 0 {
				field := fmt.Sprintf("replicas[%d].weight", j)
				if i > 0 {
					field = fmt.Sprintf("groups[%d].%s", i-1, field)
				}
				return fmt.Errorf("%s: invalid value 0, %s", field, protocol.ZeroWeightAllowed)
			}
		}
	}
	return nil
}
