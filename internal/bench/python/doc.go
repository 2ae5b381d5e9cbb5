// Package python is "fulcrum bench python": what the Python SDK
// (python/, package fulcrum_client) costs per call, on a Starlette app
// under uvicorn (one worker) whose GET /work spends 100 µs of CPU.
//
// It starts a fulcrum balancer with an on-demand group, three replica
// processes of the same app (replica.py, shipped in the binary) — plain,
// plain-control (a second plain one, the A/A control) and monitored
// (wrapped in ASGIMonitor, registered in the group) — and one Python
// driver process (driver.py) with a closed-loop caller per arm:
//
//   - plain: httpx to the plain replica;
//   - plain-control: httpx to the control replica;
//   - monitored: httpx to the monitored replica (the monitor's arm, and
//     the client target's direct calls);
//   - bound: httpx over BindingTransport through the group's front door,
//     bound to the monitored replica and calling it directly.
//
// The arms run in interleaved rounds (bench.RoundOrder), the driver and
// the replicas pinned to different CPUs when there are two. Each ratio is
// taken within a round and the median over rounds is judged: the
// monitor's cost per call (monitored against plain) ≤ 5%, and bound calls
// ≥ 0.95 × direct calls to the same replica. The replicas' CPU time per
// call (from /proc) is reported beside.
//
// The Python side needs the SDK's virtual environment (build/venv, made
// by scripts/test.sh) or --python naming an interpreter with
// fulcrum_client, starlette and uvicorn installed.
package python
