package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Defaults of the top-level settings.
const (
	DefaultAdmin           = "127.0.0.1:7070"
	DefaultDataDir         = "./fulcrum-data"
	DefaultLogLevel        = "info"
	DefaultLogFormat       = LogFormatText
	DefaultShutdownTimeout = protocol.Duration(10 * time.Second)
	DefaultHTTPEngine      = HTTPEngineLean
)

// The HTTP/1 engines of the front doors (http_engine).
const (
	// HTTPEngineLean serves plain HTTP/1.1 per-request calls on the lean
	// engine, everything else on net/http.
	HTTPEngineLean = "lean"
	// HTTPEngineStdlib serves every connection on net/http.
	HTTPEngineStdlib = "stdlib"
)

// The formats of the log and the access log (log_format).
const (
	// LogFormatText writes logfmt lines (slog's TextHandler).
	LogFormatText = "text"
	// LogFormatJSON writes one JSON object per line (slog's JSONHandler).
	LogFormatJSON = "json"
)

// logFormats are the values log_format allows.
var logFormats = []string{LogFormatText, LogFormatJSON}

// httpEngines are the values http_engine allows.
var httpEngines = []string{HTTPEngineLean, HTTPEngineStdlib}

// MaxFileBytes bounds the size of a config file.
const MaxFileBytes = 4 << 20

// File is the config file of `fulcrum serve`. The comments give each key's
// default; docs/config.md is the full reference.
type File struct {
	// Admin is the admin API's host:port; default 127.0.0.1:7070.
	Admin string `yaml:"admin"`
	// AdminToken, when set, is required as "Authorization: Bearer <token>"
	// on the admin API.
	AdminToken string `yaml:"admin_token"`
	// AdminTLS, when set, serves the admin API over TLS (admin_tls.go).
	AdminTLS AdminTLS `yaml:"admin_tls"`
	// JoinToken lets replicas of any group register without the admin
	// token; groups may set their own.
	JoinToken string `yaml:"join_token"`
	// DataDir holds the store; default ./fulcrum-data. Not used with
	// store.etcd.
	DataDir string `yaml:"data_dir"`
	// Store, when store.etcd is set, keeps the state on etcd (store.go).
	Store Store `yaml:"store"`
	// Instance names this balancer in a cluster (store.go).
	Instance Instance `yaml:"instance"`
	// AccessLog is "" (off, the default), "-" (stderr) or a file path.
	AccessLog string `yaml:"access_log"`
	// LogLevel is debug, info (default), warn or error.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text (default: logfmt lines) or json (one JSON object
	// per line), for the log and the access log alike.
	LogFormat string `yaml:"log_format"`
	// ShutdownTimeout bounds the wait for calls in flight on SIGTERM;
	// default 10s, range [0s, 1h].
	ShutdownTimeout protocol.Duration `yaml:"shutdown_timeout"`
	// HTTPEngine chooses what serves the HTTP front doors' HTTP/1.1
	// connections: lean (default) or stdlib (net/http for everything).
	HTTPEngine string `yaml:"http_engine"`
	// Groups are applied at every start; the file wins for what it
	// declares.
	Groups []protocol.Group `yaml:"groups"`
}

// Default returns the settings used without a config file.
func Default() File {
	return File{
		Admin:           DefaultAdmin,
		DataDir:         DefaultDataDir,
		LogLevel:        DefaultLogLevel,
		LogFormat:       DefaultLogFormat,
		ShutdownTimeout: DefaultShutdownTimeout,
		HTTPEngine:      DefaultHTTPEngine,
	}
}

// Load reads and parses the config file at path. The error it returns is
// Errors, each naming path.
func Load(path string, checks ...Check) (File, error) {
	data, err := readFile(path)
	if err != nil {
		return File{}, Errors{{File: path, Problem: ProblemRead, Allowed: err.Error()}}
	}
	return Parse(path, data, checks...)
}

// A Check checks a parsed file beyond its contents, such as reading the
// certificate files it names. It returns every problem, each a
// *protocol.FieldError naming the key by its dotted path in the file
// ("groups[0].replica_tls.ca"), which Load and Parse report with its line.
// Checks run only on a file without other problems.
type Check func(File) []error

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, unwrapPathError(err)
	}
	return data, nil
}

// unwrapPathError drops the path from an *os.PathError: Error names the
// file already.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Parse parses a config file's contents; name is the file name used in
// errors. It applies the defaults, decodes the YAML rejecting unknown keys,
// completes every group with its defaults and validates the result. The
// error it returns is Errors: every problem found, each with the line of
// the key at fault, in line order; checks run last, on a file without
// other problems. A YAML syntax error ends the list; a
// value of the wrong type skips the checks that depend on it.
func Parse(name string, data []byte, checks ...Check) (File, error) {
	if len(data) > MaxFileBytes {
		return File{}, Errors{{File: name, Problem: ProblemInvalid, Value: fmt.Sprintf("(%d bytes)", len(data)), Allowed: fmt.Sprintf("a config file must be at most %d bytes", MaxFileBytes)}}
	}
	f := Default()
	root, serr := parseTree(name, data)
	if serr != nil {
		return File{}, Errors{serr}
	}
	var errs []*Error
	var skip skipped
	if root != nil {
		errs, skip = checkTree(name, root)
		if len(errs) == 0 {
			dec := yaml.NewDecoder(bytes.NewReader(data))
			dec.KnownFields(true)
			if err := dec.Decode(&f); err != nil {
				return File{}, Errors{decodeError(name, root, err)}
			}
		} else if err := root.Decode(&f); err != nil {
			// checkTree pruned what it reported; this is a fallback.
			return File{}, sorted(append(errs, decodeError(name, root, err)))
		}
		for _, err := range checkZeroWeights(root) {
			errs = append(errs, fieldError(name, root, f, err))
		}
	}
	for i := range f.Groups {
		f.Groups[i] = registry.WithDefaults(f.Groups[i])
		f.Groups[i].Source = protocol.SourceConfig
	}
	for _, err := range f.validate() {
		e := fieldError(name, root, f, err)
		if _, val := locate(root, e.Key); skip.covers(e.Key, val != nil) {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) == 0 {
		for _, check := range checks {
			for _, err := range check(f) {
				errs = append(errs, fieldError(name, root, f, err))
			}
		}
	}
	if len(errs) > 0 {
		return File{}, sorted(errs)
	}
	return f, nil
}

// sorted puts errs in line order, problems without a line last.
func sorted(errs []*Error) Errors {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		la, lb := a.Line, b.Line
		if la == 0 {
			la = math.MaxInt
		}
		if lb == 0 {
			lb = math.MaxInt
		}
		return cmp.Compare(la, lb)
	})
	return Errors(errs)
}
