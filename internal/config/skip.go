package config

import "strings"

// skipped records what checkTree pruned, so that the validation after it
// does not report again what a reported problem already explains: a
// value of the wrong type skips the checks that depend on it.
type skipped struct {
	// values are the paths of values dropped for their type: a
	// validation error at, above or below one of them is skipped.
	values []string
	// partial are the paths of mappings that lost a key (unknown, or a
	// broken merge): a validation error about a key under one of them
	// that the file does not set is skipped (the key meant was probably
	// the misspelt one).
	partial []string
}

// covers reports whether a validation error at key (inFile: the file sets
// it) only echoes a problem already reported.
func (s skipped) covers(key string, inFile bool) bool {
	for _, v := range s.values {
		if key == v || underPath(key, v) || underPath(v, key) {
			return true
		}
	}
	if inFile {
		return false
	}
	for _, p := range s.partial {
		if underPath(key, p) {
			return true
		}
	}
	return false
}

// underPath reports whether key lies below path: "groups[0].name" lies
// below "groups[0]" and "groups", and everything below "".
func underPath(key, path string) bool {
	return path == "" || strings.HasPrefix(key, path+".") || strings.HasPrefix(key, path+"[")
}
