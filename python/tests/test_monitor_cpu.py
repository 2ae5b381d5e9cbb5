"""The CPU meter: cgroup quotas and usage read from a cgroup tree laid out
in a temporary directory (v1 and v2 files), and the process's own share
measured while it burns CPU."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fulcrum_client._cpu import Cgroups, CPUMeter, binding_quota, find_cgroups, quota, usage


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_v1_cgroups_quota_and_usage(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    cpu = root / "cpu,cpuacct"
    write(cpu / "kubepods" / "pod1" / "cpu.cfs_quota_us", "150000\n")
    write(cpu / "kubepods" / "pod1" / "cpu.cfs_period_us", "100000\n")
    write(cpu / "kubepods" / "pod1" / "cpuacct.usage", "2500000000\n")
    write(cpu / "kubepods" / "cpu.cfs_quota_us", "-1\n")
    write(cpu / "kubepods" / "cpu.cfs_period_us", "100000\n")
    proc = tmp_path / "cgroup.txt"
    proc.write_text("4:memory:/x\n3:cpu,cpuacct:/kubepods/pod1\n0::/\n")
    cg = find_cgroups(str(proc), root)
    assert cg.cpu == (cpu / "kubepods" / "pod1", cpu / "kubepods", cpu) and cg.acct == cg.cpu
    assert quota(cg.cpu[0]) == 1.5 and quota(cg.cpu[1]) is None
    assert binding_quota(cg) == (1.5, cpu / "kubepods" / "pod1")
    assert usage(cpu / "kubepods" / "pod1") == 2.5


def test_v2_cgroups_pick_the_lowest_quota(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    write(root / "a" / "cpu.max", "200000 100000\n")
    write(root / "a" / "b" / "cpu.max", "max 100000\n")
    write(root / "a" / "cpu.stat", "usage_usec 1500000\nuser_usec 1\n")
    proc = tmp_path / "cgroup.txt"
    proc.write_text("0::/a/b\n")
    cg = find_cgroups(str(proc), root)
    assert cg.cpu == (root / "a" / "b", root / "a", root)
    assert binding_quota(cg) == (2.0, root / "a")
    assert usage(root / "a") == 1.5
    assert find_cgroups(str(tmp_path / "missing"), root) == Cgroups()


def test_meter_measures_the_process_share_and_other_work(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    write(root / "cpu.max", "100000 100000\n")  # one core
    write(root / "cpu.stat", "usage_usec 0\n")
    cg = Cgroups(cpu=(root,), acct=(root,))
    start = time.monotonic_ns()
    meter = CPUMeter(start, cgroups=cg)
    assert meter.cores() == 1.0
    end = time.thread_time() + 0.05
    while time.thread_time() < end:
        pass
    now = time.monotonic_ns()
    # The pool used the process's time plus 0.02 s of other work's.
    own, before = meter._read(), meter._last_cpu
    assert own is not None and before is not None
    write(root / "cpu.stat", f"usage_usec {int((own - before + 0.02) * 1e6)}\n")
    s = meter.sample(now)
    wall = (now - start) / 1e9
    assert s.share is not None and s.share >= 0.05 / wall * 0.8
    assert s.other == pytest.approx(0.02 / wall, abs=0.05)
