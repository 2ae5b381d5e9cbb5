"""The end-to-end tests' harness: Python replicas as real server processes
(uvicorn running the Starlette app, gunicorn running the Flask app, both
under apps/), load generators that call a front door at fixed rates through
fulcrum_client's transports and record every call, and readings of the
balancer's group status.

Nothing here sleeps for a guessed time: servers are ready when the balancer
lists them as reported (poll with conftest.wait_for), a kill is over when
the kernel says so (polled), and the load generators pace their calls at
fixed rates (next_slot).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import psutil
import pytest

from fulcrum_client.transport import AsyncBindingTransport, BindingTransport

TESTS_DIR = Path(__file__).resolve().parent

# PRIME_N is the number every call asks about, as fulcrum demo's clients:
# about 500 trial divisions, a small real CPU cost per call.
PRIME_N = 1_000_003

Kind = Literal["uvicorn", "gunicorn"]

# The app each server kind runs (modules under apps/, imported with
# TESTS_DIR as the working directory).
APPS: dict[str, str] = {
    "uvicorn": "apps.prime_asgi:app",  # Starlette + ASGIMonitor
    "gunicorn": "apps.prime_wsgi:app",  # Flask + WSGIMonitor
}


# The group both tests make: fulcrum demo's ("prime", on-demand,
# least-loaded, health checks on /healthz) with a report every second
# rather than every 500 ms, so that a report's calls/s is the demo's
# per-second rate (a busy machine's stalls skew half-second rates).
GROUP = "prime"
GROUP_SETTINGS: dict[str, Any] = {
    "binding": "on-demand",
    "strategy": "least-loaded",
    "report_interval": "1s",
    "health": {"path": "/healthz", "interval": "1s", "timeout": "500ms"},
}


def free_port() -> int:
    """A TCP port on 127.0.0.1 free at the time of the call."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Replica:
    """One Python replica: a uvicorn or gunicorn server process (its own
    process group, so that kill9 and stop reach gunicorn's workers too)
    serving the prime app on a free port of 127.0.0.1. The app's monitor
    registers it with the balancer at admin in group. Its output goes to a
    log file in logdir (log() reads it, for failure messages)."""

    def __init__(self, kind: Kind, admin: str, group: str, logdir: Path) -> None:
        if kind not in APPS:
            raise ValueError(f"e2e_harness: replica kind {kind!r} unknown, want one of {sorted(APPS)}")
        self.kind = kind
        self.port = free_port()
        self.address = f"http://127.0.0.1:{self.port}"
        self.logfile = logdir / f"{kind}-{self.port}.log"
        env = {
            **os.environ,
            "FULCRUM_BALANCER": admin,
            "FULCRUM_GROUP": group,
            "FULCRUM_ADDRESS": self.address,
            "PYTHONUNBUFFERED": "1",
            # One process per server (uvicorn and gunicorn take their
            # default worker count from it, the monitor its own).
            "WEB_CONCURRENCY": "1",
        }
        # The servers keep idle connections open longer than httpx keeps
        # them in its pool (5 s): otherwise a call can race the server's
        # close of the connection it reuses and fail (httpx, unlike Go's
        # net/http, does not send a GET again on a reused connection that
        # closed before answering), which is not what these tests test.
        if kind == "uvicorn":
            args = [
                sys.executable, "-m", "uvicorn", APPS[kind],
                "--host", "127.0.0.1", "--port", str(self.port),
                "--timeout-keep-alive", "30",
                "--no-access-log", "--log-level", "warning",
            ]
        else:
            # One gthread worker with threads: keep-alive connections and
            # a few calls at once, in one process.
            args = [
                sys.executable, "-m", "gunicorn", APPS[kind],
                "--bind", f"127.0.0.1:{self.port}",
                "--workers", "1", "--worker-class", "gthread", "--threads", "4",
                "--keep-alive", "30",
                "--log-level", "warning",
            ]
        with open(self.logfile, "wb") as log:
            self.proc = subprocess.Popen(
                args, cwd=TESTS_DIR, env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )

    def __repr__(self) -> str:
        return f"Replica({self.kind} pid {self.proc.pid} at {self.address})"

    def log(self) -> str:
        """The server's output so far."""
        try:
            return self.logfile.read_text(errors="replace")
        except OSError as e:
            return f"(no log: {e})"

    def processes(self) -> list[psutil.Process]:
        """The server's processes now: the main one and its children."""
        try:
            main = psutil.Process(self.proc.pid)
            return [main, *main.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def kill9(self) -> None:
        """kill -9 of every process of the replica; returns once all are
        gone (or zombies) and no TCP connection to its port is still
        established (the kernel has delivered the close to every client, so
        that a client can tell the connection is dead before it sends on
        it; on a busy machine that can lag the process's death by
        milliseconds). Raises AssertionError if either takes over 10 s."""
        procs = self.processes()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        # The others are not our children: poll until they are gone or
        # zombies (a dead process whose parent has not reaped it yet).
        deadline = time.monotonic() + 10
        while alive := [p.pid for p in procs if _running(p)]:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self}: processes {alive} outlived kill -9 by 10 s")
            time.sleep(0.002)  # polling the kernel's process table: no event tells us
        while n := established(self.port):
            if time.monotonic() > deadline:
                raise AssertionError(f"{self}: {n} TCP connections to it still established 10 s after kill -9")
            time.sleep(0.002)  # polling the kernel's connection table: no event tells us

    def stop(self) -> None:
        """Stops the server: SIGTERM to its process group, SIGKILL after 10
        s, then SIGKILL to anything of the group left."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)


# 127.0.0.1 as /proc/net/tcp writes it (little-endian hex), and its
# IPv4-mapped form in /proc/net/tcp6.
_LOOPBACK_HEX = "0100007F"


def established(port: int) -> int:
    """How many TCP connections from or to 127.0.0.1:port are in state
    ESTABLISHED (/proc/net/tcp and tcp6; a client's side of a connection
    whose server has closed it is in CLOSE_WAIT, or gone after a reset)."""
    want = f"{_LOOPBACK_HEX}:{port:04X}"
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            f = line.split()
            local, remote, state = f[1], f[2], f[3]
            if state == "01" and (local.endswith(want) or remote.endswith(want)):
                n += 1
    return n


def _running(p: psutil.Process) -> bool:
    try:
        return bool(p.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


class Fleet:
    """The replicas of one test; stop_all stops every one (the fixture's
    teardown). describe() is their logs, for failure messages."""

    def __init__(self, admin: str, group: str, logdir: Path) -> None:
        self.admin, self.group, self.logdir = admin, group, logdir
        self.replicas: list[Replica] = []

    def start(self, kind: Kind) -> Replica:
        r = Replica(kind, self.admin, self.group, self.logdir)
        self.replicas.append(r)
        return r

    def stop_all(self) -> None:
        for r in self.replicas:
            r.stop()

    def describe(self) -> str:
        return "\n".join(f"--- {r} (exit {r.proc.poll()}):\n{r.log()}" for r in self.replicas)


@pytest.fixture
def fleet(balancer: Any, tmp_path: Path) -> Iterator[Fleet]:
    """The test's replicas for group GROUP of the balancer fixture, logging
    to tmp_path; all stopped at teardown. Import it into a test module to
    use it."""
    f = Fleet(balancer.admin, GROUP, tmp_path)
    yield f
    f.stop_all()


# --- calls and their outcomes ---------------------------------------------


@dataclass
class Call:
    """One call of a load client: when it began and ended (time.monotonic),
    and its outcome: served_by (the replica's address) when it succeeded,
    error otherwise. ended is None while in flight."""

    client: int
    seq: int
    began: float
    ended: float | None = None
    served_by: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.ended is not None and not self.error


@dataclass
class KillRecord:
    """What was in flight when a replica was killed: the calls that had
    begun and not ended, and the interval the kill took (from the signal
    to the last process gone)."""

    inflight: list[Call]
    began: float
    ended: float


class Ledger:
    """Every call of a load, with the calls in flight. Safe for concurrent
    use. begin and end take the ledger's lock, so kill_replica, which holds
    it while it kills, sees exactly the calls in flight at the kill: no call
    begins or ends while the replica dies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[Call] = []
        self._inflight: dict[int, Call] = {}

    def begin(self, client: int, seq: int) -> Call:
        with self._lock:
            c = Call(client, seq, time.monotonic())
            self.calls.append(c)
            self._inflight[id(c)] = c
            return c

    def end(self, c: Call, served_by: str = "", error: str = "") -> None:
        with self._lock:
            c.ended, c.served_by, c.error = time.monotonic(), served_by, error
            del self._inflight[id(c)]

    def kill_replica(self, replica: Replica) -> KillRecord:
        """Kills replica with kill -9 while no call begins or ends, and
        returns the calls that were in flight meanwhile."""
        with self._lock:
            inflight = list(self._inflight.values())
            began = time.monotonic()
            replica.kill9()
            return KillRecord(inflight, began, time.monotonic())

    def snapshot(self) -> list[Call]:
        """A copy of every call's record so far."""
        with self._lock:
            return [Call(c.client, c.seq, c.began, c.ended, c.served_by, c.error) for c in self.calls]


def check_answer(resp: httpx.Response) -> str:
    """The served_by of a prime answer, or ValueError saying what is wrong
    with it."""
    if resp.status_code != 200:
        raise ValueError(f"status {resp.status_code}: {resp.text[:200]!r}")
    body = resp.json()
    if body.get("n") != PRIME_N or body.get("prime") is not True or not body.get("served_by"):
        raise ValueError(f"answer {body!r}, want n {PRIME_N}, prime true and served_by")
    return str(body["served_by"])


def describe_error(e: BaseException) -> str:
    """A failed call's error: its type and message. (Not its request's URL:
    httpx names the request the caller made, the front door's URL, even
    when the attempt that failed went to a replica.)"""
    return f"{type(e).__name__}: {e}"


def next_slot(slot: float, period: float, now: float) -> float:
    """The time of the call after the one scheduled at slot: one period on,
    or now when that has passed already. A late call goes at once, but
    the calls missed while the client was held up (a busy machine's stall,
    a slow answer) are dropped rather than sent in a burst: a burst would
    inflate the calls/s of the one replica the client is bound to."""
    return max(slot + period, now)


class Load:
    """Clients calling GET /prime/PRIME_N through a front door, one per
    rate (calls/s), started gap seconds apart, each paced by next_slot
    until stop(); every call recorded in ledger. mode "sync": each client is a
    thread with an httpx.Client on a BindingTransport; "async": all clients
    are tasks of one asyncio loop (its own thread), each with an
    httpx.AsyncClient on an AsyncBindingTransport."""

    def __init__(self, front_door: str, rates: Sequence[float], mode: Literal["sync", "async"],
                 gap: float = 0.25, timeout: float = 10.0) -> None:
        if mode not in ("sync", "async"):
            raise ValueError(f"e2e_harness: load mode {mode!r} unknown, want sync or async")
        for r in rates:
            if not 0 < r <= 1000:
                raise ValueError(f"e2e_harness: rate {r} out of range, want (0, 1000] calls/s")
        self.front_door, self.rates, self.mode, self.gap, self.timeout = front_door, list(rates), mode, gap, timeout
        self.url = f"{front_door}/prime/{PRIME_N}"
        self.ledger = Ledger()
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._crashed: list[str] = []
        if mode == "sync":
            self._threads = [threading.Thread(target=self._run_sync, args=(i,), daemon=True) for i in range(len(rates))]
        else:
            self._threads = [threading.Thread(target=lambda: asyncio.run(self._run_async()), daemon=True)]
        for t in self._threads:
            t.start()

    def _run_sync(self, i: int) -> None:
        try:
            if self._stop.wait(i * self.gap):
                return
            period = 1.0 / self.rates[i]
            with httpx.Client(transport=BindingTransport(front_doors=[self.front_door]), timeout=self.timeout) as hc:
                next_at = time.monotonic()
                seq = 0
                while not self._stop.wait(max(0.0, next_at - time.monotonic())):
                    seq += 1
                    c = self.ledger.begin(i, seq)
                    try:
                        served_by = check_answer(hc.get(self.url))
                    except Exception as e:  # noqa: BLE001 - every failure is an outcome
                        self.ledger.end(c, error=describe_error(e))
                    else:
                        self.ledger.end(c, served_by=served_by)
                    next_at = next_slot(next_at, period, time.monotonic())
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self._crashed.append(f"client {i}: {type(e).__name__}: {e}")

    async def _run_async(self) -> None:
        await asyncio.gather(*(self._client_async(i) for i in range(len(self.rates))))

    async def _client_async(self, i: int) -> None:
        try:
            await asyncio.sleep(i * self.gap)  # staggered start, as the sync clients
            period = 1.0 / self.rates[i]
            transport = AsyncBindingTransport(front_doors=[self.front_door])
            async with httpx.AsyncClient(transport=transport, timeout=self.timeout) as hc:
                next_at = time.monotonic()
                seq = 0
                while not self._stop.is_set():
                    await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                    if self._stop.is_set():
                        break
                    seq += 1
                    c = self.ledger.begin(i, seq)
                    try:
                        served_by = check_answer(await hc.get(self.url))
                    except Exception as e:  # noqa: BLE001 - every failure is an outcome
                        self.ledger.end(c, error=describe_error(e))
                    else:
                        self.ledger.end(c, served_by=served_by)
                    next_at = next_slot(next_at, period, time.monotonic())
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self._crashed.append(f"client {i}: {type(e).__name__}: {e}")

    def stop(self) -> None:
        """Stops every client after its call in flight, and raises
        AssertionError if a client crashed (an error outside a call)."""
        self._stop.set()
        for t in self._threads:
            t.join(self.timeout + 5)
        stuck = [t.name for t in self._threads if t.is_alive()]
        if stuck or self._crashed:
            raise AssertionError(f"load clients did not stop cleanly: stuck {stuck}, crashed {self._crashed}")

    # --- readings ---

    def last_served(self) -> dict[int, str]:
        """Each client's replica (address) of its last successful call: the
        replica it is bound to, as far as its calls show."""
        out: dict[int, str] = {}
        for c in self.ledger.snapshot():
            if c.ok:
                out[c.client] = c.served_by
        return out

    def ok_since(self, t: float) -> dict[int, int]:
        """Successful calls per client that began at or after t."""
        out = {i: 0 for i in range(len(self.rates))}
        for c in self.ledger.snapshot():
            if c.ok and c.began >= t:
                out[c.client] += 1
        return out

    def failures(self) -> list[Call]:
        return [c for c in self.ledger.snapshot() if c.ended is not None and c.error]

    def served_rates(self, t0: float, t1: float) -> dict[str, float]:
        """Calls/s each replica (address) answered among the calls that
        began in [t0, t1)."""
        counts: dict[str, int] = {}
        for c in self.ledger.snapshot():
            if c.ok and t0 <= c.began < t1:
                counts[c.served_by] = counts.get(c.served_by, 0) + 1
        return {a: n / (t1 - t0) for a, n in counts.items()}


# --- the balancer's view ---------------------------------------------------


def replica_at(status: dict[str, Any], address: str) -> dict[str, Any] | None:
    """The replica of a group status registered at address, or None."""
    for r in status.get("replicas", []):
        if r.get("address") == address:
            return dict(r)
    return None


def reported(status: dict[str, Any], addresses: Sequence[str]) -> bool:
    """Whether every address is a replica of the group with a fresh report."""
    for a in addresses:
        r = replica_at(status, a)
        if r is None or r.get("load") is None:
            return False
    return True


def balanced(rates: Sequence[float], band: float) -> bool:
    """Whether every rate is within band (0.10: ±10%) of their mean; never
    for no rates or a mean of 0 (stats.Balanced in Go)."""
    if not rates:
        return False
    mean = sum(rates) / len(rates)
    if not mean > 0:
        return False
    return all(abs(r - mean) <= band * mean + 1e-9 for r in rates)


@dataclass
class Equilibrium:
    """fulcrum demo's equilibrium (internal/bench/stats.Equilibrium), fed
    timed samples: done once every sample for window seconds was balanced
    within band. samples keeps what was fed, for failure messages."""

    band: float
    window: float
    start: float | None = None
    samples: list[tuple[float, list[float]]] = field(default_factory=list)

    def add(self, t: float, rates: Sequence[float]) -> bool:
        self.samples.append((t, list(rates)))
        if not balanced(rates, self.band) or any(math.isnan(r) for r in rates):
            self.start = None
            return False
        if self.start is None:
            self.start = t
        return t - self.start >= self.window


@contextlib.contextmanager
def stopping(load: Load) -> Iterator[Load]:
    """Stops load when the block ends, however it ends."""
    try:
        yield load
    finally:
        load.stop()
