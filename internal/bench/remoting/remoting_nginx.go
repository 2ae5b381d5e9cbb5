package remoting

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
)

// The remoting bench's replicas are NGINX by default, counting primes in
// its Lua module (LuaJIT) with "fulcrum agent http" beside it: a replica
// with one thread and no language runtime, whose CPU per call does not
// depend on how often it idles between calls. --replica go runs "fulcrum
// backend prime" (Go, with the monitor library) instead, whose runtime
// spends CPU every time a call finds it idle: its system monitor thread
// wakes every 20 µs for a millisecond and more after each idle spell
// (docs/results/2026-11-26-ett-cpu-other/, 2026-11-26-go-idle-cost/).

const (
	// RemotingReplicaGo is fulcrum backend prime.
	RemotingReplicaGo = "go"
	// RemotingReplicaNGINX, the default replica, is NGINX with the Lua
	// module and the HTTP agent.
	RemotingReplicaNGINX = "nginx"
)

// nginxLuaModules are Debian's paths of the modules the NGINX replicas
// load (package libnginx-mod-http-lua): the development kit first, as the
// Lua module needs it.
var nginxLuaModules = []string{
	"/usr/lib/nginx/modules/ndk_http_module.so",
	"/usr/lib/nginx/modules/ngx_http_lua_module.so",
}

// remotingNGINXExtra is what an NGINX replica adds to the albl replica's
// configuration: the Lua module and GET /count/{X}, answered as
// "fulcrum backend prime" answers it ({"x": X, "count": N}, the primes
// below X by the sieve of Eratosthenes over X bytes) and with the same
// 400 for an X out of [0, backend.MaxCountX].
func remotingNGINXExtra() bench.NGINXExtra {
	var main string
	for _, m := range nginxLuaModules {
		main += "load_module " + m + ";\n"
	}
	bad := fmt.Sprintf(`{"error": "x: must be an integer in [0, %d]"}`, backend.MaxCountX)
	server := fmt.Sprintf(`        location /count/ {
            default_type application/json;
            return 400 '%[1]s\n';
        }
        location ~ "^/count/([0-9]{1,9})$" {
            default_type application/json;
            content_by_lua_block {
                local x = tonumber(ngx.var[1])
                if x > %[2]d then
                    ngx.status = 400
                    ngx.say('%[1]s')
                    return ngx.exit(400)
                end
                local count = 0
                if x > 2 then
                    local composite = require("ffi").new("uint8_t[?]", x)
                    for i = 2, x - 1 do
                        if composite[i] == 0 then
                            count = count + 1
                            for j = i * i, x - 1, i do composite[j] = 1 end
                        end
                    end
                end
                ngx.say('{"x": ', x, ', "count": ', count, '}')
            }
        }
`, bad, backend.MaxCountX)
	return bench.NGINXExtra{Main: main, Server: server}
}

// checkNGINXReplica says what an NGINX replica needs and is missing.
func checkNGINXReplica(env *bench.Env) error {
	if env.NGINX.Path == "" {
		return fmt.Errorf("bench: remoting --replica nginx: %s", env.NGINX.Missing)
	}
	for _, m := range nginxLuaModules {
		if _, err := os.Stat(m); err != nil {
			return fmt.Errorf("bench: remoting --replica nginx needs NGINX's Lua module (Debian package libnginx-mod-http-lua): %w", err)
		}
	}
	return nil
}

// startNGINXReplicas starts NGINX and its agent in each replica; the
// agents register the replicas with the balancer at admin and report the
// CPU of NGINX's process (cpu) and of the rest of its cgroup (cpu_other)
// every report interval of the group.
func (cl *remotingCluster) startNGINXReplicas(ctx context.Context, env *bench.Env, admin string) error {
	if err := checkNGINXReplica(env); err != nil {
		return err
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return fmt.Errorf("bench: remoting --replica nginx starts the agents in the replicas' namespaces with nsenter (util-linux): %w", err)
	}
	extra := remotingNGINXExtra()
	for i, r := range cl.reps {
		p, err := env.StartReplicaNGINX(ctx, r, i+1, extra)
		if err != nil {
			return err
		}
		cl.procs = append(cl.procs, p)
		a, err := env.StartReplicaAgent(ctx, nsenter, r, admin, remotingGroup, "cpu", []int{p.Pid()})
		if err != nil {
			return err
		}
		cl.procs = append(cl.procs, a)
		cl.bases = append(cl.bases, bench.TestbedReplicaURL(r))
	}
	return nil
}
