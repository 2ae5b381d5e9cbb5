package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"github.com/fulcrum-lb/fulcrum/internal/api"
	"github.com/fulcrum-lb/fulcrum/internal/balancer"
	"github.com/fulcrum-lb/fulcrum/internal/config"
	"github.com/fulcrum-lb/fulcrum/internal/logfile"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// reloader re-reads the config file of a running `fulcrum serve` and
// applies it: SIGHUP and POST /v1/reload. Groups go to the balancer
// (balancer.Reload: checked, and new front doors bound, before anything
// changes); log_level, log_format, access_log, admin_token, join_token,
// shutdown_timeout and admin_tls apply here once the balancer took the
// groups; a changed admin, data_dir, http_engine, store or instance is only reported
// (restart_required). Safe for concurrent use: reloads are serialised.
type reloader struct {
	path     string
	override func(*config.File) // the command line's --admin and --data-dir
	insecure bool
	b        *balancer.Balancer
	log      *slog.Logger
	level    *slog.LevelVar
	access   *accessSink
	logOut   io.Writer // where access_log "-" writes
	token    *api.AdminToken
	// peerToken, when set, takes a new admin_token for the calls to the
	// other instances of a cluster (serve_leader.go).
	peerToken func(string)
	// peerTLS, when set, reads the files of the calls to the other
	// instances again (instance.peer_ca; serve_peertls.go).
	peerTLS func(config.File) error

	// reloadCertificates re-reads every certificate in use (the front
	// doors', the admin API's, the replicas' client pairs). It runs at
	// every reload before the file is read, so that certificates are
	// renewed even when the file is refused.
	reloadCertificates func() error
	// applyAdminTLS applies a changed admin_tls to the admin listener
	// (nil: a changed admin_tls is listed under restart_required).
	applyAdminTLS func(old, next config.File) error
	// logFormat switches the log's format (log_format).
	logFormat func(format string)

	// started is the config the balancer started with: admin, data_dir
	// and http_engine stay as they were until the next start.
	started config.File

	mu  sync.Mutex
	cur config.File // the config in force
}

// shutdownTimeout is the shutdown_timeout now in force.
func (r *reloader) shutdownTimeout() protocol.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.ShutdownTimeout
}

// reload re-reads and applies the config file. A file that cannot be used
// changes nothing; the error is then an *api.ConfigError with every
// problem, each logged too.
func (r *reloader) reload() (protocol.ReloadResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log.Info("reloading the config file", "file", r.path)
	if r.reloadCertificates != nil {
		if err := r.reloadCertificates(); err != nil {
			r.log.Error("certificates reloaded with errors; the previous ones are still served where they failed", "err", err)
		} else {
			r.log.Info("certificates reloaded")
		}
	}
	next, err := config.Load(r.path, fileChecks()...)
	if err != nil {
		return protocol.ReloadResult{}, r.refuse(err)
	}
	r.override(&next)
	if err := checkAdminExposure(r.started.Admin, next.AdminToken, r.insecure); err != nil {
		return protocol.ReloadResult{}, r.refuse(fmt.Errorf("%s: admin_token: %w", r.path, err))
	}
	var newAccess io.Writer
	var newFile *logfile.File
	if next.AccessLog != r.cur.AccessLog {
		if newAccess, newFile, err = openAccessLog(next.AccessLog, r.logOut); err != nil {
			return protocol.ReloadResult{}, r.refuse(fmt.Errorf("%s: access_log: %w", r.path, err))
		}
	}

	br, err := r.b.Reload(next.Groups)
	var re *balancer.ReloadError
	if errors.As(err, &re) {
		if newFile != nil {
			_ = newFile.Close()
		}
		lines := make([]string, len(re.Problems))
		for i, p := range re.Problems {
			lines[i] = r.path + ": " + p.Error()
		}
		return protocol.ReloadResult{}, r.refuseLines(lines)
	}
	if errors.Is(err, balancer.ErrClosed) {
		if newFile != nil {
			_ = newFile.Close()
		}
		return protocol.ReloadResult{}, err // shutting down
	}

	// The balancer took the groups (or failed writing them: err); the
	// rest of the file applies either way.
	old := r.cur
	if next.LogLevel != old.LogLevel {
		r.level.Set(parseLevel(next.LogLevel))
	}
	if next.AdminToken != old.AdminToken {
		r.token.Set(next.AdminToken)
		if r.peerToken != nil {
			r.peerToken(next.AdminToken)
		}
	}
	if next.JoinToken != old.JoinToken {
		r.b.SetJoinToken(next.JoinToken)
	}
	if next.LogFormat != old.LogFormat && r.logFormat != nil {
		r.logFormat(next.LogFormat)
	}
	if next.AccessLog != old.AccessLog {
		r.access.set(newAccess, newFile)
	}
	// Front doors are replaced when the access log goes on or off, or
	// changes format.
	if (old.AccessLog == "") != (next.AccessLog == "") || (next.AccessLog != "" && next.LogFormat != old.LogFormat) {
		var w io.Writer
		if next.AccessLog != "" {
			w = r.access
		}
		r.b.SetAccessLog(w, next.LogFormat == config.LogFormatJSON)
	}
	if r.peerTLS != nil {
		if err := r.peerTLS(next); err != nil {
			r.log.Error("the calls to the other instances keep the certificates in use", "err", err)
		}
	}
	adminTLSPending := false
	if next.AdminTLS != old.AdminTLS {
		if r.applyAdminTLS == nil {
			adminTLSPending = true
		} else if err := r.applyAdminTLS(old, next); err != nil {
			r.log.Error("admin_tls not applied; the admin API keeps the one in force", "err", err)
			next.AdminTLS = old.AdminTLS
		}
	}
	r.cur = next

	res := protocol.ReloadResult{Added: br.Added, Changed: br.Changed, Removed: br.Removed}
	for _, k := range []struct {
		key      string
		old, new string
	}{{"admin", r.started.Admin, next.Admin}, {"data_dir", r.started.DataDir, next.DataDir}, {"http_engine", r.started.HTTPEngine, next.HTTPEngine},
		{"store", fmt.Sprintf("%+v", r.started.Store), fmt.Sprintf("%+v", next.Store)}, {"instance", fmt.Sprintf("%+v", withoutPeerCA(r.started.Instance)), fmt.Sprintf("%+v", withoutPeerCA(next.Instance))}} {
		if k.old != k.new {
			res.RestartRequired = append(res.RestartRequired, k.key)
		}
	}
	if adminTLSPending {
		res.RestartRequired = append(res.RestartRequired, "admin_tls")
	}
	slices.Sort(res.RestartRequired)
	if err != nil {
		r.log.Error("config file applied in part", "file", r.path, "err", err)
		return res, err
	}
	r.log.Info("config file reloaded", "file", r.path, "added", res.Added, "changed", res.Changed, "removed", res.Removed, "restart_required", res.RestartRequired)
	if len(res.RestartRequired) > 0 {
		r.log.Warn("config file changes that take effect only at the next start", "keys", res.RestartRequired)
	}
	return res, nil
}

// refuse logs a config file that cannot be used and returns it as an
// *api.ConfigError.
func (r *reloader) refuse(err error) error {
	var es config.Errors
	if errors.As(err, &es) {
		return r.refuseLines(es.Lines())
	}
	return r.refuseLines([]string{err.Error()})
}

func (r *reloader) refuseLines(lines []string) error {
	for _, l := range lines {
		r.log.Error("config file refused; nothing changed", "problem", l)
	}
	return &api.ConfigError{Errors: lines}
}

// accessSink is the access log of the HTTP front doors: a writer that a
// reload points at another file, and whose file SIGUSR1 reopens at its
// path (reopen). Safe for concurrent use.
type accessSink struct {
	mu sync.Mutex
	w  io.Writer
	f  *logfile.File // the file w writes to, closed when replaced
}

func (s *accessSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(p), nil // off: a front door still finishing on the old writer
	}
	return s.w.Write(p)
}

// set makes the sink write to w (nil: discard), closing the file it
// wrote to.
func (s *accessSink) set(w io.Writer, f *logfile.File) {
	s.mu.Lock()
	old := s.f
	s.w, s.f = w, f
	s.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
}

// close closes the sink's file.
func (s *accessSink) close() { s.set(nil, nil) }

// reopen reopens the sink's file at its path (logfile.File.Reopen), for
// log rotation. ok is false when the access log is not a file (off or
// "-"); path is the file's.
func (s *accessSink) reopen() (path string, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return "", false, nil
	}
	return s.f.Path(), true, s.f.Reopen()
}

// openAccessLog opens the access log named by access_log: nil for "" (off),
// logOut for "-", else the file, appended to (and reopened on SIGUSR1).
func openAccessLog(name string, logOut io.Writer) (io.Writer, *logfile.File, error) {
	switch name {
	case "":
		return nil, nil, nil
	case "-":
		return logOut, nil, nil
	}
	f, err := logfile.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, f, nil
}

// withoutPeerCA is in without instance.peer_ca, which a reload applies
// (serve_peertls.go): the rest of instance takes effect at the next start.
func withoutPeerCA(in config.Instance) config.Instance {
	in.PeerCA = ""
	return in
}
