package affinity

import (
	"github.com/fulcrum-lb/fulcrum/internal/affinity/rules"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Rules are a group's compiled affinity rules (package rules).
type Rules = rules.Rules

// Rule is one compiled affinity rule.
type Rule = rules.Rule

// Defaults and ranges of a rule's settings.
const (
	DefaultTimeout    = rules.DefaultTimeout
	DefaultMaxEntries = rules.DefaultMaxEntries
)

// Compile checks a group's affinity rules for protocol proto and compiles
// them (rules.Compile: errors are *protocol.FieldError naming the rule's
// field, "affinity[1].match"). An empty list compiles to nil Rules.
func Compile(proto string, list []protocol.AffinityRule) (*Rules, error) {
	return rules.Compile(proto, list)
}
