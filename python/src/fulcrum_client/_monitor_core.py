"""The monitor's core: what it counts per call, what a report window
yields, and which calls an advisory sends back. No I/O and no clock of its
own: every method takes the time (monotonic nanoseconds) from its caller,
so tests drive it directly. Safe for concurrent use (one lock, held for a
few dictionary and integer operations per call).

It does what the Go monitor does (monitor/call.go, report.go, clients.go,
quantiles.go, probe.go): latency_ms is an EWMA (weight 0.5) of each
window's mean latency; latency_p50_ms and latency_p99_ms are the window's
quantiles from a log-scale histogram (four buckets per power of two of
microseconds, each quantile the middle of its bucket); bound_clients is
the number of bound clients that called in the window; clients lists the
busiest of them with their rates. cpu and cpu_other are measured by the
caller (fulcrum_client._cpu) and passed in.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from fulcrum_client._advice import (
    Advice,
    admit_term,
    busiest_first,
    new_advice,
    normalise_level,
    same_advisory,
)
from fulcrum_client.protocol import MAX_CLIENT_ID_LENGTH, NOMINAL
from fulcrum_client.wire import MAX_LOAD, Advisory

HIST_BUCKETS = 4 * 36
LATENCY_WEIGHT = 0.5
IDLE_WINDOWS = 3
MAX_CLIENTS = 65536
LATENCY_SAMPLES = 64
MIN_BUCKET_SAMPLES = 4
MIN_INTERVAL = 0.010

LOAD_RATE = "rate"
LOAD_INFLIGHT = "inflight"
LOAD_CPU = "cpu"
LOAD_LATENCY = "latency"
LOAD_SOURCES = (LOAD_RATE, LOAD_INFLIGHT, LOAD_CPU, LOAD_LATENCY)


def hist_bucket(ns: int) -> int:
    """A latency's histogram bucket: one per microsecond below 4 µs, then
    four per power of two, split by the two bits after the leading one."""
    x = max(ns, 0) // 1000
    if x < 4:
        return x
    e = x.bit_length() - 1
    return min(4 * (e - 1) + ((x >> (e - 2)) & 3), HIST_BUCKETS - 1)


def hist_mid_ms(i: int) -> float:
    """The middle of bucket i's latencies, in milliseconds."""
    if i < 4:
        return (i + 0.5) / 1000
    e, sub = i // 4 + 1, i % 4
    lo, hi = (4 + sub) << (e - 2), (5 + sub) << (e - 2)
    return (lo + hi) / 2 / 1000


def window_quantiles(counts: list[int]) -> tuple[float, float] | None:
    """The median and 99th percentile (ms) of a window's histogram counts,
    or None when the window has no call."""
    n = sum(counts)
    if n == 0:
        return None

    def at(q: float) -> float:
        rank = max(int(q * n + 0.999999), 1)
        seen = 0
        for i, c in enumerate(counts):
            seen += c
            if seen >= rank:
                return hist_mid_ms(i)
        return hist_mid_ms(HIST_BUCKETS - 1)

    return at(0.50), at(0.99)


@dataclass
class Registration:
    """What the monitor holds of its registration."""

    id: str
    token: str
    front_door: str
    report_interval: float = 0.0


class Call(NamedTuple):
    """One call begun with Core.begin; end it exactly once. close: answer
    it with Connection: close (a worker's, see Core.begin)."""

    start: int
    rif: int
    close: bool = False


class Core:
    """The monitor's state and decisions; see the module doc."""

    def __init__(
        self,
        now: int,
        *,
        group: str = "",
        load: str = LOAD_RATE,
        load_func: Callable[[], float] | None = None,
        top_clients: int = 64,
        worker: tuple[int, int] | None = None,
        front_door: str = "",
        interval: float = 0.5,
    ) -> None:
        if load not in LOAD_SOURCES:
            raise ValueError(f"monitor: load {load!r}: must be one of {', '.join(LOAD_SOURCES)}")
        self._lock = threading.Lock()
        self._binding_prefix = group + "/" if group else ""
        self._load = load
        self._load_func = load_func
        self._top = top_clients
        self.worker = worker
        self._front_door_opt = front_door.rstrip("/")
        self._interval = max(interval, MIN_INTERVAL)
        # Per-call counters, guarded by _lock.
        self._inflight = 0
        self._calls = 0
        self._done = 0
        self._latency_ns = 0
        self._hist = [0] * HIST_BUCKETS
        self._clients: dict[str, list[int]] = {}  # id -> [calls, idle windows]
        # (latency µs, rif) of the latest calls; the first _ring_len are set.
        self._ring: list[tuple[int, int]] = [(0, 0)] * LATENCY_SAMPLES
        self._ring_next = 0
        self._ring_len = 0
        # Counters for Monitor.stats: calls sent back; calls run (summed
        # at each window's end).
        self.rebinds = 0
        self.total_calls = 0
        # Window state, guarded by _lock.
        self._win_start = now
        self._latency = 0.0
        self._have_latency = False
        self._rates: list[tuple[str, float]] = []
        self._last: dict[str, Any] = {"load": 0.0}
        self._advice = Advice()
        self._term_seen = 0
        self._reg: Registration | None = None

    # --- registration -------------------------------------------------

    def adopt(self, reg: Registration) -> None:
        """Makes reg the current registration: the highest term seen is
        forgotten and its report interval adopted."""
        with self._lock:
            if not reg.front_door:
                reg.front_door = self._front_door_opt
            elif self._front_door_opt:
                reg.front_door = self._front_door_opt
            reg.front_door = reg.front_door.rstrip("/")
            self._reg = reg
            self._term_seen = 0
            if reg.report_interval > 0:
                self._interval = max(reg.report_interval, MIN_INTERVAL)

    @property
    def registration(self) -> Registration | None:
        return self._reg

    @property
    def front_door(self) -> str:
        reg = self._reg
        return reg.front_door if reg is not None else ""

    @property
    def interval(self) -> float:
        """The report interval in seconds (at least 10 ms)."""
        return self._interval

    @property
    def advisory(self) -> Advisory:
        """The advisory the monitor obeys now."""
        return self._advice.advisory

    @property
    def inflight(self) -> int:
        return self._inflight

    @property
    def calls(self) -> int:
        """Calls run so far (the current window's included)."""
        return self.total_calls + self._calls

    # --- per call -----------------------------------------------------

    def owns_binding(self, binding: str) -> bool:
        """Whether a Fulcrum-Binding value names this monitor's group."""
        return not self._binding_prefix or binding.startswith(self._binding_prefix)

    def begin(self, client: str, bound: bool, now: int) -> Call | None:
        """Starts one call. None means: answer it with a rebind redirect to
        front_door instead of running it (and do not end it). client is the
        caller's Fulcrum-Client ("" when unknown); bound says it carries a
        Fulcrum-Binding of this group. A worker's call of a client the
        advisory names but a sibling owns comes back with close set, once
        per client per advisory: answer it with Connection: close, so that
        the client's next call may reach another worker (its owner)."""
        close = False
        if bound:
            advice = self._advice
            if (advice.drain or advice.targets) and self.front_door and advice.send_back(client):
                with self._lock:
                    self.rebinds += 1
                return None
            close = bool(advice.others) and advice.reconnect(client)
        with self._lock:
            if bound and client and len(client) <= MAX_CLIENT_ID_LENGTH:
                c = self._clients.get(client)
                if c is not None:
                    c[0] += 1
                elif len(self._clients) < MAX_CLIENTS:
                    self._clients[client] = [1, 0]
            self._calls += 1
            self._inflight = rif = self._inflight + 1
        return Call(now, rif, close)

    def end(self, call: Call, now: int) -> None:
        """Finishes a call: its latency and the in-flight count."""
        d = now - call[0]
        if d < 0:
            d = 0
        us = d // 1000
        if us < 4:
            bucket = us
        else:
            e = us.bit_length() - 1
            bucket = min(4 * (e - 1) + ((us >> (e - 2)) & 3), HIST_BUCKETS - 1)
        with self._lock:
            self._latency_ns += d
            self._hist[bucket] += 1
            self._done += 1
            self._inflight -= 1
            i = self._ring_next
            self._ring[i] = (us, call[1])
            self._ring_next = (i + 1) % LATENCY_SAMPLES
            if self._ring_len < LATENCY_SAMPLES:
                self._ring_len += 1

    def load_probe(self) -> dict[str, float]:
        """The answer to a load probe: calls in flight and the median
        latency (ms) of the latest calls that started with about as many in
        flight as one more call would (the same power-of-two bucket), or of
        all of them when fewer than four did."""
        with self._lock:
            rif = self._inflight
            ring = self._ring[: self._ring_len]
        if not ring:
            return {"rif": rif, "latency_ms": 0.0}
        bucket = (rif + 1).bit_length()
        same = [us for us, r in ring if max(r, 0).bit_length() == bucket]
        pick = sorted(same if len(same) >= MIN_BUCKET_SAMPLES else [us for us, _ in ring])
        return {"rif": rif, "latency_ms": pick[len(pick) // 2] / 1000}

    # --- reports ------------------------------------------------------

    def close_window(self, now: int, cpu: float | None = None, cpu_other: float | None = None) -> dict[str, Any]:
        """Ends the report window at now and returns its report (the JSON
        object POSTed to /v1/report). cpu is the process's CPU share over
        the window, cpu_other the share of its cores other work took; None
        where they cannot be measured. A window of no length returns the
        previous report."""
        with self._lock:
            elapsed = now - self._win_start
            if elapsed <= 0:
                return self._last
            secs = elapsed / 1e9
            d_calls, d_done, d_lat = self._calls, self._done, self._latency_ns
            hist = self._hist
            self._calls = self._done = self._latency_ns = 0
            self._hist = [0] * HIST_BUCKETS
            self._win_start = now
            rates: dict[str, float] = {}
            for cid in list(self._clients):
                c = self._clients[cid]
                if c[0] == 0:
                    c[1] += 1
                    if c[1] >= IDLE_WINDOWS:
                        del self._clients[cid]
                    continue
                rates[cid] = c[0] / secs
                c[0], c[1] = 0, 0
            self._rates = busiest_first(rates)
            inflight = float(self._inflight)
            self.total_calls += d_calls

            rps = d_calls / secs
            if d_done > 0:
                mean = d_lat / d_done / 1e6
                if not self._have_latency:
                    self._latency, self._have_latency = mean, True
                else:
                    self._latency = LATENCY_WEIGHT * mean + (1 - LATENCY_WEIGHT) * self._latency
            metrics: dict[str, float] = {"inflight": inflight, "rps": rps, "latency_ms": self._latency}
            q = window_quantiles(hist)
            if q is not None:
                metrics["latency_p50_ms"], metrics["latency_p99_ms"] = q
            metrics["bound_clients"] = float(len(self._rates))
            if cpu is not None:
                metrics["cpu"] = min(max(cpu, 0.0), 1.0)
            if cpu_other is not None:
                metrics["cpu_other"] = min(max(cpu_other, 0.0), 1.0)
            concurrency = d_lat / elapsed
            if self._load_func is not None:
                load = float(self._load_func())
            elif self._load == LOAD_INFLIGHT:
                load = max(inflight, concurrency)
            elif self._load == LOAD_CPU:
                load = metrics.get("cpu", 0.0)
            elif self._load == LOAD_LATENCY:
                load = self._latency
            else:
                load = rps
            if math.isnan(load) or math.isinf(load) or load < 0:
                load = 0.0
            report: dict[str, Any] = {"load": min(load, MAX_LOAD), "metrics": metrics}
            top = self._rates[: self._top]
            if top:
                report["clients"] = [{"id": cid, "rate": rate} for cid, rate in top]
            if self.worker is not None:
                report["worker"] = {"index": self.worker[0], "count": self.worker[1]}
            self._last = report
            return report

    def apply(self, adv: Advisory) -> bool:
        """Makes adv the advisory obeyed, unless its term is below the
        highest seen since the last registration (ignored whole: False) or
        it is the one obeyed already (same level, term and epoch), and
        adopts its report interval. Returns whether it was admitted."""
        with self._lock:
            admit, highest = admit_term(self._term_seen, adv.term)
            if not admit:
                return False
            self._term_seen = highest
            if adv.report_interval > 0:
                self._interval = max(adv.report_interval, MIN_INTERVAL)
            level = normalise_level(adv.advisory)
            if level != adv.advisory:
                adv = dataclasses.replace(adv, advisory=level)
            if same_advisory(self._advice.advisory, adv):
                return True
            if level == NOMINAL:
                self._advice = Advice(advisory=adv)
                return True
            self._advice = new_advice(adv, self._rates, self._shed_target_locked, self.worker)
            return True

    def _shed_target_locked(self, shed: float) -> float:
        """shed (load units) as calls/s of bound clients: as is when the load
        is the call rate, else the same share of the call rate as shed is of
        the last reported load. Caller holds _lock."""
        if self._load_func is None and self._load == LOAD_RATE:
            return shed
        load = float(self._last.get("load", 0.0))
        if load <= 0:
            return 0.0
        return shed / load * float(self._last.get("metrics", {}).get("rps", 0.0))

    def reset_advice(self) -> None:
        """Stops sending clients back (the monitor is closing)."""
        with self._lock:
            self._advice = Advice()

    def chosen(self) -> list[str]:
        """The clients the current advisory sends back (for logs)."""
        return self._advice.chosen()


__all__ = ["Call", "Core", "Registration", "hist_bucket", "window_quantiles"]
