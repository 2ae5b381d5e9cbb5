// Package nginxreplica is the NGINX configuration of a replica that runs
// beside "fulcrum agent http": static files, /healthz, stub_status for the
// agent, and the load probe path passed on to the agent. It is one
// template (replica.conf.tmpl, embedded), used by every test and bench that
// runs NGINX as a replica and shown whole in docs/agents.md.
//
// Every path NGINX writes to (pid file, error log, temp directories) and
// the document root are under Config.Dir, so NGINX runs as an ordinary
// user:
//
//	conf, err := nginxreplica.Render(nginxreplica.Config{Dir: dir, Listen: "127.0.0.1:8081", Agent: "127.0.0.1:9100"})
//	// write conf to dir/nginx.conf, files to serve to dir/www, then
//	// nginx -p dir -c dir/nginx.conf -e dir/error.log
package nginxreplica

import (
	_ "embed"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/template"
)

//go:embed replica.conf.tmpl
var templateText string

var tmpl = template.Must(template.New("replica.conf").Option("missingkey=error").Parse(templateText))

// ServedHeader is the header that carries Config.Index.
const ServedHeader = "X-Replica"

// DefaultWorkerConnections is Config.WorkerConnections' default.
const DefaultWorkerConnections = 8192

// Config is what varies between replicas. Dir and Listen are required.
type Config struct {
	// Dir holds everything: nginx.pid, the temp directories and, by
	// default, error.log; www under it is the document root. An absolute
	// path.
	Dir string
	// Listen is NGINX's listen address: host:port or a port.
	Listen string
	// Agent is the host:port of "fulcrum agent http --listen", which
	// GET /fulcrum/probe is passed to; "" leaves the location out.
	Agent string
	// Index, when not 0, is sent in a ServedHeader on every answer
	// (so a load generator can tell which replica served a call).
	Index int
	// ErrorLog is the error log's path (default Dir/error.log; "stderr"
	// is NGINX's standard error).
	ErrorLog string
	// WorkerConnections defaults to DefaultWorkerConnections.
	WorkerConnections int
	// OneProcess runs NGINX as a single process (master_process off):
	// the whole of it stays in the cgroup it was started in and gets its
	// parent's death signal. Default: a master and one worker.
	OneProcess bool
	// User is NGINX's user directive, needed only when NGINX starts as
	// root and must read files only root can ("" leaves it out).
	User string
	// Main is configuration added at the top level (e.g. load_module
	// lines), each line ending in a newline.
	Main string
	// Server is configuration added at the end of the server block (e.g.
	// more locations), indented and ending in a newline.
	Server string
}

// Render returns the configuration for c, or an error naming the field
// that is missing or invalid.
func Render(c Config) (string, error) {
	if c.Dir == "" || !filepath.IsAbs(c.Dir) {
		return "", fmt.Errorf("nginxreplica: dir %q, must be an absolute path", c.Dir)
	}
	if c.Listen == "" || strings.ContainsAny(c.Listen, " ;\n") {
		return "", fmt.Errorf("nginxreplica: listen %q, must be host:port or a port", c.Listen)
	}
	if c.Index < 0 {
		return "", fmt.Errorf("nginxreplica: index %d, must be 0 (no header) or more", c.Index)
	}
	if c.WorkerConnections < 0 {
		return "", fmt.Errorf("nginxreplica: worker_connections %d, must be 0 (default %d) or more", c.WorkerConnections, DefaultWorkerConnections)
	}
	if c.ErrorLog == "" {
		c.ErrorLog = filepath.Join(c.Dir, "error.log")
	}
	if c.WorkerConnections == 0 {
		c.WorkerConnections = DefaultWorkerConnections
	}
	var sb strings.Builder
	if err := tmpl.Execute(&sb, c); err != nil {
		return "", errors.Join(errors.New("nginxreplica: template"), err)
	}
	return sb.String(), nil
}

// Example is the configuration docs/agents.md shows: a replica whose files
// are under /srv/replica1, listening on 127.0.0.1:8081, with its agent on
// 127.0.0.1:9100, started by an ordinary user (1024 connections: the
// usual limit of open files).
func Example() Config {
	return Config{Dir: "/srv/replica1", Listen: "127.0.0.1:8081", Agent: "127.0.0.1:9100", WorkerConnections: 1024}
}
