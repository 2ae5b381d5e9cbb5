"""`fulcrum bench python --smoke` (internal/bench/python): the bench of the
SDK's per-call costs, run end to end with this interpreter — a balancer,
four uvicorn/Starlette replicas (two with ASGIMonitor), the driver with a
BindingTransport arm — so that CI runs it. Here rather than in Go: the
test command makes the virtual environment after the Go tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ARMS = ["plain", "plain-control", "monitored", "direct", "bound"]
SMOKE_CALLS, SMOKE_ROUNDS = 40, 2
WORK_US = 100


def test_bench_python_smoke(fulcrum_bin: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = subprocess.run(
        [fulcrum_bin, "bench", "python", "--smoke", "--out", str(out), "--python", sys.executable],
        capture_output=True, text=True, timeout=180,
    )
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    res = json.loads((out / "results.json").read_text())
    assert res["experiment"] == "python"
    assert res["python"]["path"] == str(Path(sys.executable).absolute())
    assert set(res["python"]["packages"]) == {"fulcrum-client", "httpx", "starlette", "uvicorn"}
    assert res["work_us"] == WORK_US
    assert res["size"] == {"warmup_calls": 20, "calls_per_round": SMOKE_CALLS, "rounds": SMOKE_ROUNDS}
    rows = res["rows"]
    assert [r["name"] for r in rows] == ARMS
    assert [r["replica"] for r in rows] == ["plain", "plain-control", "monitored", "client", "client"]
    assert [r["client"] for r in rows] == ["httpx"] * 4 + ["httpx+BindingTransport"]
    for r in rows:
        what = r["name"]
        assert r["errors"] == 0, f"{what}: {r.get('first_error')}"
        assert r["calls"] == SMOKE_CALLS * SMOKE_ROUNDS, what
        assert r["throughput_rps"] > 0, what
        assert 0 < r["latency_p50_us"] <= r["latency_p99_us"], what
        # The handler spends WORK_US of CPU per call: the replica's CPU
        # time per call, read from /proc, cannot be less.
        assert r["replica_cpu_us_per_call"] >= WORK_US, f"{what}: {r['replica_cpu_us_per_call']} µs of CPU per call"
    ratios = res["ratios"]
    for k in ("monitor_time", "monitor_cpu", "bound_throughput", "control_time", "monitor_p50", "bound_p50"):
        assert len(ratios[k]["per_round"]) == SMOKE_ROUNDS, k
        assert all(x > 0 for x in ratios[k]["per_round"]), k
        assert ratios[k]["median"] > 0, k
    targets = {t["name"]: t for t in res["targets"]}
    assert len(targets) == 2
    for t in targets.values():
        assert t["status"] in ("met", "missed"), t
    monitor = next(t for n, t in targets.items() if n.startswith("Python monitor"))
    want = "met" if ratios["monitor_time"]["median"] - 1 <= 0.05 else "missed"
    assert monitor["status"] == want, monitor
    for name in ("throughput.png", "ratios.png", "replica_cpu.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    report = (out / "report.md").read_text()
    for heading in ("## Targets", "## Arms", "## Ratios"):
        assert heading in report
    assert len((out / "rounds.csv").read_text().splitlines()) == 1 + len(ARMS) * SMOKE_ROUNDS
    assert "met" in run.stdout or "missed" in run.stdout


def test_bench_python_without_venv_says_how_to_make_it(fulcrum_bin: str, tmp_path: Path) -> None:
    run = subprocess.run(
        [fulcrum_bin, "bench", "python", "--smoke", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert run.returncode == 1, f"exit {run.returncode}\n{run.stderr}"
    assert "python3 -m venv build/venv" in run.stderr
    assert "--python" in run.stderr
