"""The process's CPU time as a share of the cores it may use, and the
share of those cores other work took, per report window: the Go monitor's
cpu and cpu_other metrics (monitor/cpu.go, internal/cgroupcpu).

The cores are the process's CPU affinity, or the lowest cgroup quota on
its cgroup's path where lower (v1 cpu.cfs_quota_us / cpu.cfs_period_us,
v2 cpu.max; read at every report). Other work is measured in the pool the
process competes in: the cgroup whose quota binds it (its usage counts
every process under that quota), else, where the cgroup hierarchy is
visible and sets no quota, the whole host; where no hierarchy is visible,
there is no pool and no cpu_other.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Cgroups:
    """The process's cgroup directories, innermost first: where quotas are
    set (cpu) and where usage is accounted (acct). Empty where the
    hierarchy is not visible."""

    cpu: tuple[Path, ...] = ()
    acct: tuple[Path, ...] = ()


def _chain(mount: Path, rel: str) -> tuple[Path, ...]:
    """mount/rel and its ancestors up to mount, innermost first, of those
    that exist."""
    parts = [p for p in rel.strip("/").split("/") if p]
    dirs = [mount.joinpath(*parts[:i]) for i in range(len(parts), -1, -1)]
    return tuple(d for d in dirs if d.is_dir())


def find_cgroups(proc_cgroup: str = "/proc/self/cgroup", root: Path = CGROUP_ROOT) -> Cgroups:
    """The process's cgroups: the v1 cpu and cpuacct hierarchies where
    mounted (as /sys/fs/cgroup/<controllers>), else the v2 unified one."""
    try:
        lines = Path(proc_cgroup).read_text().splitlines()
    except OSError:
        return Cgroups()
    cpu: tuple[Path, ...] = ()
    acct: tuple[Path, ...] = ()
    unified: tuple[Path, ...] = ()
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        controllers, rel = parts[1].split(","), parts[2]
        if parts[0] == "0" and parts[1] == "":
            unified = _chain(root, rel)
            continue
        mount = root / parts[1]
        if not mount.is_dir():
            continue
        if "cpu" in controllers:
            cpu = _chain(mount, rel)
        if "cpuacct" in controllers:
            acct = _chain(mount, rel)
    if cpu:
        return Cgroups(cpu=cpu, acct=acct or cpu)
    return Cgroups(cpu=unified, acct=unified)


def quota(d: Path) -> float | None:
    """The cores a cgroup directory's quota allows, None without a limit."""
    try:
        f = (d / "cpu.max").read_text().split()
        if len(f) == 2 and f[0] != "max" and float(f[0]) > 0 and float(f[1]) > 0:
            return float(f[0]) / float(f[1])
        return None
    except (OSError, ValueError):
        pass
    try:
        q = float((d / "cpu.cfs_quota_us").read_text())
        p = float((d / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return q / p if q > 0 and p > 0 else None


def usage(d: Path) -> float | None:
    """Seconds of CPU every process in cgroup d has used (v1
    cpuacct.usage, else v2 cpu.stat usage_usec), None if unreadable."""
    try:
        return int((d / "cpuacct.usage").read_text()) / 1e9
    except (OSError, ValueError):
        pass
    try:
        for line in (d / "cpu.stat").read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == "usage_usec":
                return int(v) / 1e6
    except (OSError, ValueError):
        pass
    return None


def binding_quota(cg: Cgroups) -> tuple[float, Path | None] | None:
    """The lowest quota on the process's path and the accounting directory
    of the cgroup that sets it (None when the accounting hierarchy has no
    cgroup at the same place); None when no cgroup on the path has one."""
    best: tuple[float, int] | None = None
    for i, d in enumerate(cg.cpu):
        q = quota(d)
        if q is not None and (best is None or q < best[0]):
            best = (q, i)
    if best is None:
        return None
    q, at = best
    acct: Path | None = None
    if cg.acct:
        rel = cg.cpu[at].relative_to(cg.cpu[-1])
        want = cg.acct[-1] / rel
        acct = want if want in cg.acct else None
    return q, acct


def affinity_cores() -> float:
    try:
        return float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return float(psutil.cpu_count() or 1)


def host_busy() -> tuple[float, float] | None:
    """Seconds the host's cores have been busy (everything but idle and
    iowait) and how many cores it counts."""
    try:
        t = psutil.cpu_times()
    except (psutil.Error, OSError):
        return None
    busy = t.user + t.system + getattr(t, "nice", 0.0) + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0) + getattr(t, "steal", 0.0)
    return busy, float(psutil.cpu_count() or 1)


@dataclass(frozen=True)
class CPUSample:
    """One window's shares: share of the process (None where its CPU time
    cannot be read), other of the work sharing its cores (None where no
    pool is known)."""

    share: float | None
    other: float | None


class CPUMeter:
    """Samples the process's CPU share and other work's share once per
    window. Not safe for concurrent use: the monitor calls it from its
    report loop only."""

    def __init__(self, now: int, cpus: float = 0.0, cgroups: Cgroups | None = None) -> None:
        cg = find_cgroups() if cgroups is None else cgroups
        self._cg = cg
        self._cpus = cpus
        self._pool: Callable[[], tuple[float, float] | None] | None = self._read_pool if cg.cpu else None
        self._last_cpu = self._read()
        self._last_pool = self._pool() if self._pool else None
        self._last_wall = now

    def cores(self) -> float:
        """The cores the process may use now."""
        if self._cpus > 0:
            return self._cpus
        procs = affinity_cores()
        bq = binding_quota(self._cg) if self._cg.cpu else None
        return bq[0] if bq is not None and bq[0] < procs else procs

    def _read(self) -> float | None:
        # CLOCK_PROCESS_CPUTIME_ID: every thread's, to the nanosecond
        # (psutil's process times count clock ticks, too coarse for a
        # window of 100 ms).
        try:
            return time.process_time()
        except OSError:
            return None

    def _read_pool(self) -> tuple[float, float] | None:
        bq = binding_quota(self._cg)
        if bq is not None:
            q, acct = bq
            u = usage(acct) if acct is not None else None
            return None if u is None else (u, q)
        return host_busy()

    def sample(self, now: int) -> CPUSample:
        """The shares since the previous sample (now in monotonic ns).
        other = (pool - own - (P - C)·wall) / (C·wall) for a pool of P
        cores of which the process may use C, clamped to [0, 1]."""
        cpu = self._read()
        pool = self._pool() if self._pool else None
        wall = (now - self._last_wall) / 1e9
        prev, prev_pool = self._last_cpu, self._last_pool
        self._last_cpu, self._last_pool, self._last_wall = cpu, pool, now
        if cpu is None or prev is None:
            return CPUSample(None, None)
        cores = self.cores()
        if wall <= 0 or not cores > 0:
            return CPUSample(0.0, None)
        span = wall * cores
        used = cpu - prev
        share = min(max(used / span, 0.0), 1.0)
        other = None
        if pool is not None and prev_pool is not None and pool[1] > 0:
            spare = max(pool[1] - cores, 0.0) * wall
            other = min(max(((pool[0] - prev_pool[0]) - used - spare) / span, 0.0), 1.0)
        return CPUSample(share, other)
