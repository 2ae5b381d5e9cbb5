package tcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// The arms of the experiment, in the order the report lists them.
const (
	ArmDirect  = "direct"
	ArmFulcrum = "fulcrum"
	ArmHAProxy = "haproxy"
	ArmNGINX   = "nginx"
)

// NGINXStreamModule is Debian's NGINX stream module (package
// libnginx-mod-stream), which the NGINX arm loads.
const NGINXStreamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

// arm is one way of reaching the echo replicas: straight (direct, the
// limit) or through a balancer process.
type arm struct {
	name string
	// addrs are the addresses a client connects to, taken in turn
	// connection by connection: the replicas for direct, the balancer's
	// listener otherwise.
	addrs []string
	// proc is the balancer process, nil for direct.
	proc *bench.Proc
	// skipped says why the arm did not run ("" when it did).
	skipped string
}

// addr returns the address of a client's i-th connection.
func (a *arm) addr(i int) string { return a.addrs[i%len(a.addrs)] }

// startEcho starts an echo replica on a free loopback port.
func startEcho(ctx context.Context, env *bench.Env, name string) (string, *bench.Proc, error) {
	lines := make(chan string, 1)
	p, err := env.Start(bench.ProcSpec{Name: env.UniqueName(name), Path: env.Binary,
		Args: []string{"backend", "echo", "--listen", "127.0.0.1:0"}, FirstLine: lines})
	if err != nil {
		return "", nil, err
	}
	addr, err := bench.WaitLine(ctx, p, lines, "listening on ", 20*time.Second)
	if err != nil {
		p.Stop(0)
		return "", nil, err
	}
	if err := waitEcho(ctx, p, addr, 20*time.Second); err != nil {
		p.Stop(0)
		return "", nil, err
	}
	env.Logf("echo replica %s: %s, pid %d", p.Name, addr, p.Pid())
	return addr, p, nil
}

// waitEcho polls addr every 20ms until a byte sent comes back, the
// process exits, or within passes.
func waitEcho(ctx context.Context, p *bench.Proc, addr string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = echoOnce(ctx, addr); last == nil {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("bench tcp: %s exited (%v); see %s", p.Name, p.Err(), p.Log)
		case <-ctx.Done():
			return fmt.Errorf("bench tcp: %s does not echo at %s within %s (last: %v); see %s", p.Name, addr, within, last, p.Log)
		case <-tick.C:
		}
	}
}

// echoOnce connects to addr, sends one byte and reads it back, within a
// second.
func echoOnce(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
	if _, err := nc.Write([]byte{'?'}); err != nil {
		return err
	}
	var b [1]byte
	if _, err := io.ReadFull(nc, b[:]); err != nil {
		return err
	}
	if b[0] != '?' {
		return errors.New("wrong byte back")
	}
	return nil
}

// startProxy starts a balancer listening on a free port: command writes
// its configuration for the address and returns its executable and
// arguments. It retries when the process does not echo (the port may have
// been taken meanwhile).
func startProxy(ctx context.Context, env *bench.Env, kind string, command func(addr, name string) (string, []string, error)) (*arm, error) {
	var lastErr error
	for range 3 {
		addr, err := bench.FreeAddr()
		if err != nil {
			return nil, err
		}
		name := env.UniqueName(kind)
		path, args, err := command(addr, name)
		if err != nil {
			return nil, err
		}
		p, err := env.Start(bench.ProcSpec{Name: name, Path: path, Args: args})
		if err != nil {
			return nil, err
		}
		if lastErr = waitEcho(ctx, p, addr, 20*time.Second); lastErr != nil {
			p.Stop(0)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		env.Logf("%s %s: %s, pid %d", kind, name, addr, p.Pid())
		return &arm{name: kind, addrs: []string{addr}, proc: p}, nil
	}
	return nil, lastErr
}

// startHAProxy starts HAProxy in TCP mode before the replicas.
func startHAProxy(ctx context.Context, env *bench.Env, replicas []string, maxConn int) (*arm, error) {
	return startProxy(ctx, env, ArmHAProxy, func(addr, name string) (string, []string, error) {
		path := filepath.Join(env.Dir, "logs", name+".cfg")
		if err := os.WriteFile(path, []byte(haproxyConfig(addr, replicas, maxConn)), 0o644); err != nil {
			return "", nil, err
		}
		return env.HAProxy.Path, []string{"-db", "-f", path}, nil
	})
}

// haproxyConfig is HAProxy's configuration: TCP mode, two threads (the
// machine's cores at most; fulcrum's Go runtime uses them all), splice
// where the kernel offers it (option splice-auto), round robin per
// connection over the replicas, health-checked by connect every second
// like fulcrum's tcp groups, no logging.
func haproxyConfig(listen string, replicas []string, maxConn int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `global
    maxconn %[1]d
    nbthread 2

defaults
    mode tcp
    maxconn %[1]d
    option splice-auto
    timeout connect 2s
    timeout client 90s
    timeout server 90s

frontend bench
    bind %[2]s
    default_backend replicas

backend replicas
    balance roundrobin
`, maxConn, listen)
	for i, r := range replicas {
		fmt.Fprintf(&sb, "    server r%d %s check inter 1s\n", i+1, r)
	}
	return sb.String()
}

// startNGINX starts NGINX's stream proxy before the replicas, in the
// foreground as one process (master_process off) like the bench's other
// NGINX runs, so that the parent-death signal reaches it.
func startNGINX(ctx context.Context, env *bench.Env, replicas []string, maxConn int) (*arm, error) {
	return startProxy(ctx, env, ArmNGINX, func(addr, name string) (string, []string, error) {
		prefix, err := env.ScratchDir("nginx")
		if err != nil {
			return "", nil, err
		}
		errLog := filepath.Join(env.Dir, "logs", name+"-error.log")
		path := filepath.Join(env.Dir, "logs", name+".conf")
		if err := os.WriteFile(path, []byte(nginxConfig(addr, prefix, errLog, replicas, maxConn)), 0o644); err != nil {
			return "", nil, err
		}
		return env.NGINX.Path, []string{"-p", prefix, "-c", path, "-e", errLog}, nil
	})
}

// nginxConfig is NGINX's configuration: the stream module, one worker
// (one process: master_process off), round robin per connection over the
// replicas. Each proxied connection takes two of worker_connections.
func nginxConfig(listen, prefix, errLog string, replicas []string, maxConn int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `load_module %[1]s;
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile %[5]d;
pid %[2]s/nginx.pid;
error_log %[3]s warn;

events {
    worker_connections %[4]d;
}

stream {
    upstream replicas {
`, NGINXStreamModule, prefix, errLog, 2*maxConn+64, 2*maxConn+256)
	for _, r := range replicas {
		fmt.Fprintf(&sb, "        server %s;\n", r)
	}
	fmt.Fprintf(&sb, `    }

    server {
        listen %s;
        proxy_pass replicas;
        proxy_connect_timeout 2s;
        proxy_timeout 90s;
    }
}
`, listen)
	return sb.String()
}
