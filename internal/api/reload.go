package api

import (
	"errors"
	"net/http"
	"strings"
)

// ConfigError is a config file that a reload refused: nothing changed.
// Errors are every problem, one line each, in line order (the lines
// `fulcrum serve --check` prints).
type ConfigError struct {
	Errors []string
}

func (e *ConfigError) Error() string {
	return "api: config file refused: " + strings.Join(e.Errors, "; ")
}

// reload re-reads the config file: 200 with what changed, 400
// invalid_config with every problem (nothing changed), 409 without a
// config file.
func (s *server) reload(w http.ResponseWriter, r *http.Request) {
	if s.opts.Reload == nil {
		writeError(w, http.StatusConflict, apiError{Code: codeNoConfigFile, Message: "the balancer was started without --config: there is no config file to reload"})
		return
	}
	res, err := s.opts.Reload()
	var ce *ConfigError
	switch {
	case errors.As(err, &ce):
		writeError(w, http.StatusBadRequest, apiError{Code: codeInvalidConfig, Message: "the config file was refused; nothing changed", Errors: ce.Errors})
		return
	case err != nil:
		s.fail(w, r, err) // 503 while shutting down, else 500
		return
	}
	for _, l := range []*[]string{&res.Added, &res.Changed, &res.Removed, &res.RestartRequired} {
		if *l == nil {
			*l = []string{}
		}
	}
	writeJSON(w, http.StatusOK, res)
}
