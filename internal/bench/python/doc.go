// Package python is "fulcrum bench python": what the Python SDK
// (python/, package fulcrum_client) costs per call, on a Starlette app
// under uvicorn (one worker) whose GET /work spends 100 µs of CPU.
//
// It starts a fulcrum balancer with two on-demand groups, four replica
// processes of the same app (replica.py, shipped in the binary) — plain,
// plain-control (a second plain one, the A/A control), monitored (wrapped
// in ASGIMonitor, registered in one group) and client (the same, in the
// other group) — and one Python driver process (driver.py) with a
// closed-loop caller per arm:
//
//   - plain: httpx to the plain replica;
//   - plain-control: httpx to the control replica;
//   - monitored: httpx to the monitored replica;
//   - direct: httpx to the client replica;
//   - bound: httpx over BindingTransport through the client replica's
//     group's front door, bound to it and calling it directly.
//
// Each replica but the client one serves one arm: a replica called twice
// a round stays warmer than one called once and answers faster.
//
// The arms run in interleaved rounds (bench.RoundOrder), the driver and
// the replicas pinned to different CPUs when there are two. Each ratio is
// taken within a round and the median over rounds is judged: the
// monitor's cost per call (monitored against plain) ≤ 5%, and bound calls
// ≥ 0.95 × direct calls to the same replica (bound against direct). The replicas' CPU time per
// call (from /proc) is reported beside.
//
// The Python side needs the SDK's virtual environment (build/venv, made
// by scripts/test.sh) or --python naming an interpreter with
// fulcrum_client, starlette and uvicorn installed.
package python
