"""The process's CPU time as a share of the cores it may use, per report
window (the Go monitor's cpu metric, monitor/cpu.go)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import psutil


def available_cores() -> float:
    """The cores the process may use: its CPU affinity, or the quota of its
    cgroup (v2 cpu.max, read at every call) where that is lower."""
    try:
        cores = float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        cores = float(psutil.cpu_count() or 1)
    try:
        text = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if len(text) == 2 and text[0] != "max":
            quota = int(text[0]) / int(text[1])
            if 0 < quota < cores:
                return quota
    except (OSError, ValueError, ZeroDivisionError):
        pass
    return cores


class CPUMeter:
    """Turns the process's cumulative CPU time into its share (0-1) of the
    cores it may use over each window. Not safe for concurrent use: the
    monitor calls it from its report loop only."""

    def __init__(self, now: int, cpus: float = 0.0, read: Callable[[], float | None] | None = None) -> None:
        self._proc = psutil.Process()
        self._read = read or self._process_cpu
        self._cores: Callable[[], float] = (lambda: cpus) if cpus > 0 else available_cores
        self._last_cpu = self._read()
        self._last_wall = now

    def _process_cpu(self) -> float | None:
        try:
            t = self._proc.cpu_times()
        except psutil.Error:
            return None
        return float(t.user + t.system)

    def sample(self, now: int) -> float | None:
        """The share since the previous sample (now in monotonic ns), None
        when the process's CPU time cannot be read."""
        cpu = self._read()
        prev, self._last_cpu = self._last_cpu, cpu
        wall = (now - self._last_wall) / 1e9
        self._last_wall = now
        if cpu is None or prev is None:
            return None
        cores = self._cores()
        if wall <= 0 or not cores > 0:
            return 0.0
        return min(max((cpu - prev) / (wall * cores), 0.0), 1.0)
