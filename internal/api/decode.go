package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// allowedUnknownField is the Allowed text of an unknown member.
const allowedUnknownField = "is not a known field (see /v1/openapi.yaml)"

// readBody reads at most limit bytes of r's body. A larger body is a
// FieldError on "body".
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *protocol.FieldError) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, &protocol.FieldError{Field: "body", Allowed: fmt.Sprintf("must be at most %d bytes", limit)}
	case err != nil:
		return nil, &protocol.FieldError{Field: "body", Allowed: "must be a complete request body (" + err.Error() + ")"}
	}
	return data, nil
}

// decodeJSON reads one JSON object from r's body into dst (a pointer to a
// struct), rejecting unknown fields, wrong types, a key twice in one
// object (keys that differ only in case included: they name the same
// field), trailing data and bodies over limit. The error names the
// offending field as the client wrote it.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any) *protocol.FieldError {
	data, fe := readBody(w, r, limit)
	if fe != nil {
		return fe
	}
	return unmarshalStrict(data, dst)
}

// Errors of decodeJSON and unmarshalStrict say in Allowed what the field
// must be and, in Value (a string, or nil), what it was instead; see
// jsonBodyError.

// unmarshalStrict decodes data into dst as decodeJSON does.
func unmarshalStrict(data []byte, dst any) *protocol.FieldError {
	if len(bytes.TrimSpace(data)) == 0 {
		return &protocol.FieldError{Field: "body", Allowed: "must be a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err, data, reflect.TypeOf(dst))
	}
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 { // JSON's whitespace
		return &protocol.FieldError{Field: "body", Allowed: "must be a single JSON object (there is data after it)"}
	}
	if err := protocol.UniqueKeys(data, true); err != nil {
		var fe *protocol.FieldError
		if errors.As(err, &fe) {
			return &protocol.FieldError{Field: fe.Field, Allowed: "is a duplicate key: a key must appear only once in its object (compared without case)"}
		}
		return &protocol.FieldError{Field: "body", Allowed: err.Error()}
	}
	return nil
}

// jsonError turns an encoding/json error into a FieldError naming the field.
func jsonError(err error, data []byte, t reflect.Type) *protocol.FieldError {
	var (
		te *json.UnmarshalTypeError
		se *json.SyntaxError
	)
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return &protocol.FieldError{Field: field, Value: "a JSON " + te.Value, Allowed: "must be " + describeType(te.Type)}
	case errors.As(err, &se):
		return &protocol.FieldError{Field: "body", Allowed: fmt.Sprintf("must be valid JSON (%v, at byte %d)", se, se.Offset)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &protocol.FieldError{Field: "body", Allowed: "must be valid JSON (it ends early)"}
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name := strings.Trim(f, `"`)
		if path := locateUnknown(data, t, name); path != "" {
			name = path
		}
		return &protocol.FieldError{Field: name, Allowed: allowedUnknownField}
	}
	// An error from a field's own UnmarshalJSON (a duration) carries no
	// path: find the field by decoding the fields one by one.
	if path, ferr := locateBad(data, t, ""); path != "" {
		var bse *protocol.ByteSizeError
		if errors.As(ferr, &bse) {
			return &protocol.FieldError{Field: path, Value: bse.Value, Allowed: protocol.ByteSizeAllowed}
		}
		return &protocol.FieldError{Field: path, Allowed: ferr.Error()}
	}
	return &protocol.FieldError{Field: "body", Allowed: "must be a valid JSON object (" + msg + ")"}
}

// describeType names a Go type the way a JSON client thinks of it.
func describeType(t reflect.Type) string {
	if t == reflect.TypeOf(protocol.Duration(0)) {
		return "a duration string such as \"500ms\""
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "of type " + t.String()
}

// jsonFields maps a struct type's JSON member names to their field types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				if _, shadowed := out[k]; !shadowed {
					out[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// stringTagged reports whether the member name of struct type t is a
// number written as a string (the ",string" option).
func stringTagged(t reflect.Type, name string) bool {
	for i := 0; i < t.NumField(); i++ {
		tag := t.Field(i).Tag.Get("json")
		n, opts, _ := strings.Cut(tag, ",")
		if n == name {
			return slices.Contains(strings.Split(opts, ","), "string")
		}
	}
	return false
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// locateBad decodes data (an object of type t) member by member and
// returns the dotted path of the first member that does not decode, with
// its error. Arrays are indexed as "replicas[2].address".
func locateBad(data []byte, t reflect.Type, prefix string) (string, error) {
	t = deref(t)
	switch t.Kind() {
	case reflect.Struct:
		var members map[string]json.RawMessage
		if json.Unmarshal(data, &members) != nil {
			return "", nil
		}
		fields := jsonFields(t)
		for name, raw := range members {
			ft, ok := fields[name]
			if !ok {
				continue
			}
			path := join(prefix, name)
			if stringTagged(t, name) && !bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
				// encoding/json's ",string" error names no field.
				return path, errors.New(`must be a number in a JSON string, such as "42"`)
			}
			if err := json.Unmarshal(raw, reflect.New(ft).Interface()); err != nil {
				if deeper, derr := locateBad(raw, ft, path); deeper != "" {
					return deeper, derr
				}
				return path, err
			}
		}
	case reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return "", nil
		}
		for i, raw := range items {
			path := fmt.Sprintf("%s[%d]", prefix, i)
			if err := json.Unmarshal(raw, reflect.New(t.Elem()).Interface()); err != nil {
				if deeper, derr := locateBad(raw, t.Elem(), path); deeper != "" {
					return deeper, derr
				}
				return path, err
			}
		}
	}
	return "", nil
}

// locateUnknown finds the dotted path of the unknown member name in data
// (an object of type t), or "".
func locateUnknown(data []byte, t reflect.Type, name string) string {
	var walk func(data []byte, t reflect.Type, prefix string) string
	walk = func(data []byte, t reflect.Type, prefix string) string {
		t = deref(t)
		switch t.Kind() {
		case reflect.Struct:
			var members map[string]json.RawMessage
			if json.Unmarshal(data, &members) != nil {
				return ""
			}
			fields := jsonFields(t)
			for k, raw := range members {
				ft, ok := fields[k]
				if !ok && strings.EqualFold(k, name) {
					return join(prefix, k)
				}
				if ok {
					if p := walk(raw, ft, join(prefix, k)); p != "" {
						return p
					}
				}
			}
		case reflect.Slice:
			var items []json.RawMessage
			if json.Unmarshal(data, &items) != nil {
				return ""
			}
			for i, raw := range items {
				if p := walk(raw, t.Elem(), fmt.Sprintf("%s[%d]", prefix, i)); p != "" {
					return p
				}
			}
		}
		return ""
	}
	return walk(data, t, "")
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
