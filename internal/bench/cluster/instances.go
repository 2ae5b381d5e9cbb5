package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// adminToken is the admin_token every instance has (the cluster calls
// itself with it).
const adminToken = "fulcrum-bench-cluster-token"

// hosts are the instances' loopback addresses, A, B and C.
var hosts = []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}

// sessionTTL is the instances' store.etcd.session_ttl (the least etcd
// allows): failovers are measured against 2 × sessionTTL.
const sessionTTL = 2 * time.Second

// instance is one "fulcrum serve" of the cluster.
type instance struct {
	name  string // fulcrum-a, fulcrum-b, fulcrum-c
	host  string
	admin string // admin API base URL
	proc  *bench.Proc
	hc    *http.Client
}

// startInstances starts one instance per host on etcd under prefix and
// waits until each is ready.
func startInstances(ctx context.Context, env *bench.Env, etcd []*etcdMember, prefix string) ([]*instance, error) {
	var out []*instance
	for i, host := range hosts {
		in, err := startInstance(ctx, env, etcd, prefix, "fulcrum-"+string(rune('a'+i)), host)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

func startInstance(ctx context.Context, env *bench.Env, etcd []*etcdMember, prefix, name, host string) (*instance, error) {
	addr, err := freeAddrOn(host)
	if err != nil {
		return nil, err
	}
	logName := env.UniqueName(name)
	cfg := filepath.Join(env.Dir, "logs", logName+".yaml")
	body := fmt.Sprintf(`admin: %s
admin_token: %s
shutdown_timeout: 1s
instance: {name: %s}
store:
  etcd:
    endpoints: [%s]
    prefix: %s
    session_ttl: %s
`, addr, adminToken, name, strings.Join(endpoints(etcd), ", "), prefix, sessionTTL)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return nil, err
	}
	args := []string{"serve", "--config", cfg}
	if env.Profile {
		args = append(args, "--cpuprofile", filepath.Join(env.Dir, "logs", logName+".cpu.pprof"))
	}
	p, err := env.Start(bench.ProcSpec{Name: logName, Path: env.Binary, Args: args})
	if err != nil {
		return nil, err
	}
	in := &instance{name: name, host: host, admin: "http://" + addr, proc: p, hc: &http.Client{Timeout: 10 * time.Second}}
	if err := bench.WaitHTTP(ctx, p, in.admin+"/readyz", 20*time.Second); err != nil {
		return nil, err
	}
	env.Logf("instance %s: admin %s, pid %d", name, in.admin, p.Pid())
	return in, nil
}

// freeAddrOn is a port on host that was free a moment ago.
func freeAddrOn(host string) (string, error) {
	for range 100 {
		addr := net.JoinHostPort(host, strconv.Itoa(10000+rand.IntN(32768-10000)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		return addr, ln.Close()
	}
	return "", fmt.Errorf("cluster: no free port on %s in 100 draws", host)
}

// do sends body (JSON, unless nil) to the instance's admin API with the
// admin token and decodes a 2xx answer into out (unless nil); another
// status is an error with the answer.
func (in *instance) do(ctx context.Context, method, path string, body, out any) error {
	status, raw, err := in.call(ctx, method, path, body)
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return fmt.Errorf("cluster: %s %s%s: status %d: %s", method, in.admin, path, status, bytes.TrimSpace(raw))
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// call is do returning the status and the body whatever the status.
func (in *instance) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, in.admin+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := in.hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("cluster: %s %s%s: %w", method, in.admin, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// group reads a group's status.
func (in *instance) group(ctx context.Context, name string) (protocol.GroupStatus, error) {
	var st protocol.GroupStatus
	err := in.do(ctx, http.MethodGet, "/v1/groups/"+name, nil, &st)
	return st, err
}

// frontDoor is the base URL of group name's front door on the instance,
// once it listens: its bound address, with the instance's host for a
// wildcard.
func (in *instance) frontDoor(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		st, err := in.group(ctx, name)
		if err == nil && st.Listening != "" {
			host, port, err := net.SplitHostPort(st.Listening)
			if err != nil {
				return "", fmt.Errorf("cluster: group %s at %s listens on %q: %w", name, in.name, st.Listening, err)
			}
			if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
				host = in.host
			}
			return "http://" + net.JoinHostPort(host, port), nil
		}
		if !pause(ctx, 10*time.Millisecond) {
			return "", fmt.Errorf("cluster: group %s not listening at %s: %v", name, in.name, err)
		}
	}
}

// createGroup creates a group at in (front door a wildcard with port 0:
// each instance binds a port of its own) and returns its front doors on
// every instance, once each listens.
func createGroup(ctx context.Context, at *instance, all []*instance, name string, spec map[string]any) ([]string, error) {
	body := map[string]any{"front_door": "0.0.0.0:0"}
	for k, v := range spec {
		body[k] = v
	}
	if err := at.do(ctx, http.MethodPut, "/v1/groups/"+name, body, nil); err != nil {
		return nil, err
	}
	var doors []string
	for _, in := range all {
		d, err := in.frontDoor(ctx, name)
		if err != nil {
			return nil, err
		}
		doors = append(doors, d)
	}
	return doors, nil
}

// register registers address with group at in and returns its id and
// token.
func register(ctx context.Context, in *instance, group, address string) (protocol.Registered, error) {
	var reg protocol.Registered
	err := in.do(ctx, http.MethodPost, "/v1/groups/"+group+"/replicas", protocol.Registration{Address: address}, &reg)
	return reg, err
}

// waitActive waits until group has n active replicas at in.
func waitActive(ctx context.Context, in *instance, group string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		st, err := in.group(ctx, group)
		active := 0
		for _, r := range st.Replicas {
			if r.State == "active" {
				active++
			}
		}
		if err == nil && active >= n {
			return nil
		}
		if !pause(ctx, 10*time.Millisecond) {
			return fmt.Errorf("cluster: group %s has %d of %d replicas active at %s (%v)", group, active, n, in.name, err)
		}
	}
}

// pause waits d, or until ctx ends (false).
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
