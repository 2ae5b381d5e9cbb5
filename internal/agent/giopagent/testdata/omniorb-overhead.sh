#!/bin/bash
# The GIOP agent's overhead in front of an omniORB server, against direct
# calls: the omniORB C++ Prime client (e2e/omniorb/orb) calls is_prime(7919)
# in a closed loop, N calls a round, three rounds rotating direct, through
# HAProxy in TCP mode (what any extra hop costs: a proxy that copies bytes
# and looks at nothing) and through "fulcrum agent giop", which is
# registered with a real balancer ("fulcrum serve", a giop group) and
# pushes reports. Prints per round the mean latency, calls/s and the CPU
# time per call of the proxy process (HAProxy or the agent).
#
# Build the programs first (as e2e/omniorb does):
#   mkdir -p /tmp/orb && cd /tmp/orb && /usr/bin/omniidl -bcxx $REPO/e2e/omniorb/orb/prime.idl
#   g++ -O2 -std=c++17 -I . -c primeSK.cc
#   for p in prime_server prime_client; do
#     g++ -O2 -std=c++17 -I . -o $p $REPO/e2e/omniorb/orb/$p.cc primeSK.o -lomniORB4 -lomnithread; done
#   go build -o /tmp/orb/fulcrum ./cmd/fulcrum
# Run, under the bench lock:
#   BIN=/tmp/orb flock /tmp/fulcrum-bench.lock internal/agent/giopagent/testdata/omniorb-overhead.sh
set -euo pipefail
BIN=${BIN:?set BIN to the directory with fulcrum, prime_server and prime_client}
N=${N:-20000}
ADMIN_PORT=${ADMIN_PORT:-17070}
dir=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
cd "$dir"
cat > fulcrum.yaml <<Y
admin: 127.0.0.1:$ADMIN_PORT
data_dir: $dir/data
groups:
  - name: prime
    protocol: giop
    front_door: 127.0.0.1:0
    binding: on-demand
    report_interval: 500ms
Y
"$BIN/fulcrum" serve --config fulcrum.yaml 2>serve.log & pids+=($!)
"$BIN/prime_server" > server.out 2>server.log & pids+=($!)
wait_for() { for _ in $(seq 200); do eval "$1" && return 0; sleep 0.05; done; echo "timed out: $1" >&2; exit 1; }
wait_for '[ -s server.out ]'
wait_for "curl -sf http://127.0.0.1:$ADMIN_PORT/readyz >/dev/null"
ior=$(head -1 server.out)
"$BIN/fulcrum" agent giop --listen 127.0.0.1:0 --target "$ior" \
    --register "http://127.0.0.1:$ADMIN_PORT" --group prime > agent.out 2>agent.log & agent=$!
pids+=($agent)
wait_for 'grep -q "^reference" agent.out'
aref=$(sed -n 's/^reference //p' agent.out)
# HAProxy in TCP mode in front of the same server.
sport=$(ss -ltnp | awk -v p="pid=${pids[1]}," '$0 ~ p {sub(/.*:/, "", $4); print $4; exit}')
hport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > haproxy.cfg <<H
global
  maxconn 100
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
listen prime
  bind 127.0.0.1:$hport
  server s1 127.0.0.1:$sport
H
haproxy -f haproxy.cfg -db > haproxy.log 2>&1 & haproxy=$!
pids+=($haproxy)
wait_for "ss -ltn | grep -q ':$hport '"
# prime_server's object is also reachable by corbaloc with the key "Prime".
href="corbaloc:iiop:1.2@127.0.0.1:$hport/Prime"
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
for round in 1 2 3; do
  for via in direct haproxy agent; do
    ref=$ior proxy=$agent
    [ "$via" = agent ] && ref=$aref
    [ "$via" = haproxy ] && ref=$href proxy=$haproxy
    c0=$(cpu $proxy)
    "$BIN/prime_client" --calls "$N" --arg 7919 "$ref" | tail -1 > last.json
    c1=$(cpu $proxy)
    python3 -c "
import json; s = json.load(open('last.json'))
cpu = '' if '$via' == 'direct' else ', proxy CPU %.1f us/call' % (($c1 - $c0) * 1e6 / $hz / s['calls'])
print('%-7s round %d: %d/%d ok, mean %.0f us, %.0f calls/s%s' % (
    '$via', $round, s['ok'], s['calls'], s['mean_us'], s['calls'] / (s['elapsed_us'] / 1e6), cpu))"
  done
done
curl -s "http://127.0.0.1:$ADMIN_PORT/v1/groups/prime" | python3 -c "
import json, sys; r = json.load(sys.stdin)['replicas'][0]
print('balancer sees the agent', r['state'], {k: round(v, 3) for k, v in r['metrics'].items()})"
