// Package config reads the YAML config file of `fulcrum serve`.
//
// Parsing goes defaults → decode (unknown keys rejected) → per-group
// defaults → validation. Every error is an *Error that names the file, the
// line, the key as a dotted path, the value and what is allowed:
//
//	f, err := config.Load("fulcrum.yaml")
//	var ce *config.Error
//	if errors.As(err, &ce) {
//		// fulcrum.yaml:7: groups[0].binding: invalid value "sometimes",
//		// must be one of: per-session, on-demand, per-request
//		os.Exit(2)
//	}
//
// docs/config.md is the reference of every key.
package config
