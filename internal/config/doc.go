// Package config reads the YAML config file of `fulcrum serve`.
//
// Parsing goes defaults → decode (unknown keys rejected) → per-group
// defaults → validation, and reports every problem at once: Load and Parse
// return Errors, a list of *Error in line order, each naming the file, the
// line, the key as a dotted path, the value and what is allowed. A YAML
// syntax error ends the list; a value of the wrong type is dropped and the
// checks that depend on it are skipped.
//
//	f, err := config.Load("fulcrum.yaml")
//	var es config.Errors
//	if errors.As(err, &es) {
//		// fulcrum.yaml:7: groups[0].binding: invalid value "sometimes",
//		// must be one of: per-session, on-demand, per-request
//		for _, line := range es.Lines() { // at most MaxReported, then "… and N more"
//			fmt.Fprintln(os.Stderr, line)
//		}
//		os.Exit(2)
//	}
//
// A new key is checked in File.validate, which collects problems
// (problems.fail) rather than stopping at the first.
//
// docs/config.md is the reference of every key.
package config
