// Package registry is the server's rules for groups and replicas, whose
// shapes are package protocol's: defaults (WithDefaults), validation
// (Validate, ValidateAddress, ValidateWeight, ValidateMonitor, which need
// the strategy catalogue), address normal forms, GIOP references, tokens
// and replica ids. It does no I/O: package groupstore persists the
// records.
//
//	g := registry.WithDefaults(protocol.Group{Name: "prime", FrontDoor: ":8000"})
//	if err := registry.Validate(g); err != nil { ... } // a *protocol.FieldError
package registry
