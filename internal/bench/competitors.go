package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Proxy is a running competitor (HAProxy or NGINX) in front of replicas.
type Proxy struct {
	// URL is where clients call it.
	URL string
	// Proc is the process.
	Proc *Proc
}

// StartHAProxy starts HAProxy in HTTP mode on a free loopback port in
// front of backends, keep-alive on both sides (option http-keep-alive,
// http-reuse always), health-checking them every second like the fulcrum
// groups. It returns once a call through it to /healthz answers 200.
func (e *Env) StartHAProxy(ctx context.Context, backends []string) (*Proxy, error) {
	if e.HAProxy.Path == "" {
		return nil, fmt.Errorf("bench: %s", e.HAProxy.Missing)
	}
	return e.startProxy(ctx, "haproxy", func(addr, dir string) (string, []string, error) {
		cfg := haproxyConfig(addr, backends)
		path := filepath.Join(e.Dir, "logs", filepath.Base(dir)+".cfg")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			return "", nil, err
		}
		// -db: foreground, no daemon; the config's path in the log.
		return e.HAProxy.Path, []string{"-db", "-f", path}, nil
	})
}

// haproxyConfig is HAProxy's configuration: HTTP mode, keep-alive with
// the client and with the servers, idle server connections shared
// between client connections (http-reuse always), no logging.
func haproxyConfig(listen string, backends []string) string {
	var sb strings.Builder
	sb.WriteString(`global
    maxconn 4096

defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 2s
    timeout client 90s
    timeout server 90s
    timeout http-request 60s
    timeout http-keep-alive 90s

frontend bench
`)
	fmt.Fprintf(&sb, "    bind %s\n    default_backend replicas\n\nbackend replicas\n    balance roundrobin\n", listen)
	for i, b := range backends {
		fmt.Fprintf(&sb, "    server r%d %s check inter 1s\n", i+1, strings.TrimPrefix(b, "http://"))
	}
	return sb.String()
}

// StartNGINX starts NGINX on a free loopback port in front of backends,
// with upstream keep-alive (keepalive 64, HTTP/1.1, Connection ""). It
// runs in the foreground as one process (master_process off), so that
// the parent-death signal reaches everything it runs; its prefix (temp
// files) is under the scratch space and its error log in Dir/logs.
func (e *Env) StartNGINX(ctx context.Context, backends []string) (*Proxy, error) {
	if e.NGINX.Path == "" {
		return nil, fmt.Errorf("bench: %s", e.NGINX.Missing)
	}
	return e.startProxy(ctx, "nginx", func(addr, dir string) (string, []string, error) {
		prefix, err := e.ScratchDir("nginx")
		if err != nil {
			return "", nil, err
		}
		errLog := filepath.Join(e.Dir, "logs", filepath.Base(dir)+"-error.log")
		cfg := nginxConfig(addr, prefix, errLog, backends)
		path := filepath.Join(e.Dir, "logs", filepath.Base(dir)+".conf")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			return "", nil, err
		}
		return e.NGINX.Path, []string{"-p", prefix, "-c", path, "-e", errLog}, nil
	})
}

// nginxConfig is NGINX's configuration: keep-alive with the client and
// with the upstream, bodies up to 16 MiB buffered in memory, no access
// log, no limit on the requests of one connection that a bench reaches.
func nginxConfig(listen, prefix, errLog string, backends []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[2]s warn;

events {
    worker_connections 4096;
}

http {
    access_log off;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    client_max_body_size 16m;
    client_body_buffer_size 1m;
    proxy_buffer_size 16k;
    proxy_buffers 64 16k;
    keepalive_timeout 90s;
    keepalive_requests 100000000;

    upstream replicas {
`, prefix, errLog)
	for _, b := range backends {
		fmt.Fprintf(&sb, "        server %s;\n", strings.TrimPrefix(b, "http://"))
	}
	fmt.Fprintf(&sb, `        keepalive 64;
        keepalive_requests 100000000;
        keepalive_timeout 90s;
    }

    server {
        listen %s;
        location / {
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
`, listen)
	return sb.String()
}

// startProxy starts a competitor on a free port; command returns its
// executable and arguments for the address and a unique name. It retries
// when the process exits at start (the port may have been taken
// meanwhile).
func (e *Env) startProxy(ctx context.Context, kind string, command func(addr, name string) (string, []string, error)) (*Proxy, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		name := e.UniqueName(kind)
		path, args, err := command(addr, name)
		if err != nil {
			return nil, err
		}
		p, err := e.Start(ProcSpec{Name: name, Path: path, Args: args})
		if err != nil {
			return nil, err
		}
		url := "http://" + addr
		if err := WaitHTTP(ctx, p, url+"/healthz", 20*time.Second); err != nil {
			p.Stop(0)
			lastErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		e.Logf("%s %s: %s, pid %d", kind, name, url, p.Pid())
		return &Proxy{URL: url, Proc: p}, nil
	}
	return nil, lastErr
}
