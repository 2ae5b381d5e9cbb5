package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// DuplicateKeyAllowed is the Allowed text of a FieldError for a key that
// appears twice in one JSON object.
const DuplicateKeyAllowed = "must appear only once in its object"

// UniqueKeys checks that no JSON object in data has a key twice, and
// returns a *FieldError naming the second occurrence by its path
// ("metrics.cpu", "clients[2].id"; a duplicate key of the top-level object
// is named alone, the empty key as `""`) with Value "duplicate key". encoding/json keeps the last
// of two equal keys without a word, so a body could say one thing to a
// reader and another to fulcrum.
//
// Keys are compared after unescaping ("a" and "\u0061" are the same key).
// With fold, keys that differ only in case are the same key too: that is
// how encoding/json matches keys to struct fields, so for a body decoded
// into a struct "Weight" repeats "weight".
//
// UniqueKeys checks only what it can read: it returns nil for data that is
// not valid JSON, whose errors are the decoder's to report, after the
// duplicates before the first error. Run it on data that decoded.
func UniqueKeys(data []byte, fold bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // no number is converted, none can fail
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or not JSON: the decoder's to report
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				valueDone(stack)
				continue
			}
			key, _ := tok.(string)
			norm := key
			if fold {
				norm = foldKey(key)
			}
			if _, dup := top.keys[norm]; dup {
				name := key
				if name == "" {
					name = `""`
				}
				return &FieldError{Field: joinPath(top.path, name), Value: "duplicate key", Allowed: DuplicateKeyAllowed}
			}
			top.keys[norm] = struct{}{}
			top.key, top.wantKey = key, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, &level{
				object:  tok == json.Delim('{'),
				wantKey: tok == json.Delim('{'),
				keys:    map[string]struct{}{},
				path:    valuePath(top),
			})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone(stack)
		default:
			valueDone(stack)
		}
	}
}

// level is one open object or array of UniqueKeys.
type level struct {
	object  bool
	wantKey bool                // an object whose next token is a key (or '}')
	keys    map[string]struct{} // an object's keys so far
	key     string              // an object's current key
	index   int                 // an array's current index
	path    string              // the path of this object or array
}

// valuePath is the path of the value that starts now inside top (nil: the
// top-level value).
func valuePath(top *level) string {
	switch {
	case top == nil:
		return ""
	case top.object:
		return joinPath(top.path, top.key)
	default:
		return fmt.Sprintf("%s[%d]", top.path, top.index)
	}
}

// valueDone notes that a value inside the innermost open level ended.
func valueDone(stack []*level) {
	if len(stack) == 0 {
		return
	}
	top := stack[len(stack)-1]
	if top.object {
		top.wantKey = true
	} else {
		top.index++
	}
}

func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// foldKey maps key to one representative of its case-folding class, so
// that foldKey(a) == foldKey(b) exactly when strings.EqualFold(a, b).
func foldKey(key string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, key)
}
