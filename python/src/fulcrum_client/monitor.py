"""Monitor: measures a Python replica's load, registers it with the
balancer, reports in the background and obeys the advisories it gets back,
as the Go monitor package does (docs/libraries.md "Go monitor package",
docs/python.md "Monitor").

Framework-neutral: ASGIMonitor (fulcrum_client.asgi) and WSGIMonitor
(fulcrum_client.wsgi) wrap an application with it; anything else calls
begin/end around each call. Reports go out from a daemon thread (start,
close) or from an asyncio task (astart, aclose).

    mon = Monitor(balancer="http://127.0.0.1:7070", group="api",
                  address="http://127.0.0.1:9001")
    mon.start()            # registers in the background
    call = mon.begin(client_id, bound=True)
    if call is None:       # send the client back: 307 to mon.front_door
        ...
    else:
        try: ... finally: mon.end(call)
    mon.close()            # deregisters
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from fulcrum_client import _admin
from fulcrum_client._admin import AdminRoute, APIError, NoAdminError
from fulcrum_client.wire import Advisory, decode_advisory
from fulcrum_client._cpu import CPUMeter
from fulcrum_client._monitor_core import LOAD_RATE, LOAD_SOURCES, Call, Core, Registration
from fulcrum_client._workers import NoFreeSlotError, Slot, claim_slot, slot_dir, workers_from_env
from fulcrum_client.protocol import HEADER_ADVISORY, MAX_REPORT_CLIENTS, MAX_WORKERS

__all__ = ["APIError", "Call", "Monitor", "MonitorError", "NotRegisteredError", "Registration", "Stats"]

DEFAULT_INTERVAL = 0.5
PULL_PATH = "/fulcrum/report"
DEFAULT_TOP_CLIENTS = 64
DEFAULT_REGISTER_ATTEMPTS = 5
FIRST_BACKOFF = 0.1
MAX_BACKOFF = 10.0

log = logging.getLogger("fulcrum_client.monitor")


class MonitorError(Exception):
    """A bad option (naming it, its value and what is allowed), or the
    monitor having given up registering."""


class NotRegisteredError(MonitorError):
    """report_now before the replica has a token."""


@dataclass(frozen=True)
class Stats:
    """A monitor's counters: calls in flight now, calls run, calls sent
    back with a rebind redirect."""

    inflight: int
    calls: int
    rebinds: int


def _check_base_url(name: str, value: str) -> str:
    v = value.rstrip("/")
    u = urlsplit(v)
    if u.scheme not in ("http", "https") or not u.netloc or u.query or u.fragment:
        raise MonitorError(f"monitor: {name} {value!r}: must be an absolute http:// or https:// URL without query or fragment")
    return v


class Monitor:
    """A replica's load monitor. Safe for concurrent use.

    Options (keywords), as the Go monitor's Options:
      balancer: the admin API base URL ("http://127.0.0.1:7070");
      admins: more admin URLs of the same balancer (a cluster's instances),
        tried after balancer in order;
      group, address: the group to join and the replica's public base URL;
      join_token: the join (or admin) token sent when registering;
      token, front_door: a replica registered out of band (no registration
        at start, no deregistration at close);
      weight: relative capacity (0: the balancer's default);
      load: what is reported as the load: "rate" (calls/s, default),
        "inflight", "cpu" or "latency"; or load_func, called at each report;
      cpus: the cores the cpu share is measured against (default: the
        process's affinity, or its cgroup quota where lower);
      interval: the report interval (s) until the balancer's first answer;
        then the balancer's report_interval is authoritative (default 0.5;
        in pull mode a given interval is sent as the pull interval);
      mode: "push" (default: the monitor POSTs reports) or "pull" (the
        balancer GETs pull_url, default address + /fulcrum/report, which
        the middlewares answer; see pull);
      top_clients: how many of the busiest bound clients a report lists;
      workers: the worker count of a multi-process replica (default
        WEB_CONCURRENCY, else 1: a single process); with more than one,
        each process claims a worker index at start (fulcrum_client._workers)
        in worker_dir; or worker=(index, count) to say which one it is;
      register_attempts: refused registrations (401/403) before giving up
        (negative: never give up);
      timeout: seconds each admin API request may take;
      clock: monotonic nanoseconds (tests inject one).
    """

    def __init__(
        self,
        *,
        balancer: str = "",
        admins: Sequence[str] = (),
        group: str = "",
        address: str = "",
        join_token: str = "",
        token: str = "",
        front_door: str = "",
        weight: float = 0.0,
        load: str = "",
        load_func: Callable[[], float] | None = None,
        cpus: float = 0.0,
        interval: float | None = None,
        mode: str = "push",
        pull_url: str = "",
        top_clients: int = DEFAULT_TOP_CLIENTS,
        workers: int | None = None,
        worker: tuple[int, int] | None = None,
        worker_dir: str | Path | None = None,
        register_attempts: int = DEFAULT_REGISTER_ATTEMPTS,
        timeout: float = 10.0,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        if mode not in ("push", "pull"):
            raise MonitorError(f"monitor: mode {mode!r}: must be \"push\" or \"pull\"")
        urls: list[str] = []
        if balancer:
            urls.append(_check_base_url("balancer", balancer))
        for i, a in enumerate(admins):
            v = _check_base_url(f"admins[{i}]", a)
            if v not in urls:
                urls.append(v)
        if not urls and (mode == "push" or not token):
            raise MonitorError("monitor: balancer (or admins) is required: the admin API base URL, e.g. http://127.0.0.1:7070")
        if not token and (not group or not address):
            raise MonitorError("monitor: group and address are required to register (or give token)")
        if address:
            address = _check_base_url("address", address)
        if front_door:
            front_door = _check_base_url("front_door", front_door)
        if load and load_func is not None:
            raise MonitorError(f"monitor: load {load!r}: leave it empty when load_func is set")
        if load and load not in LOAD_SOURCES:
            raise MonitorError(f"monitor: load {load!r}: must be one of {', '.join(LOAD_SOURCES)}")
        if not 0 <= weight <= 1e6:
            raise MonitorError(f"monitor: weight {weight!r}: must be in [0, 1000000] (0: the balancer's default)")
        if not 0 <= cpus <= 1e6:
            raise MonitorError(f"monitor: cpus {cpus!r}: must be in (0, 1000000], or 0 for the process's cores")
        if interval is not None and not interval > 0:
            raise MonitorError(f"monitor: interval {interval!r}: must be a positive number of seconds")
        if mode == "pull":
            if worker is not None or (workers or 1) > 1:
                raise MonitorError("monitor: worker: multi-process replicas report in push mode only (each worker pushes its own reports)")
            pull_url = pull_url or (address + PULL_PATH if address else "")
            if pull_url:
                pull_url = _check_base_url("pull_url", pull_url)
        elif pull_url:
            raise MonitorError(f"monitor: pull_url {pull_url!r}: only in pull mode (mode=\"pull\")")
        if not 0 < top_clients <= MAX_REPORT_CLIENTS:
            raise MonitorError(f"monitor: top_clients {top_clients!r}: must be in [1, {MAX_REPORT_CLIENTS}]")
        if worker is not None:
            idx, cnt = worker
            if not 1 <= cnt <= MAX_WORKERS or not 0 <= idx < cnt:
                raise MonitorError(f"monitor: worker {worker!r}: must be (index, count) with count in [1, {MAX_WORKERS}] and 0 <= index < count")
        if workers is None and worker is None and mode == "push":
            try:
                workers = workers_from_env()
            except ValueError as e:
                raise MonitorError(str(e)) from None
        if workers is not None and not 1 <= workers <= MAX_WORKERS:
            raise MonitorError(f"monitor: workers {workers!r}: must be a whole number in [1, {MAX_WORKERS}]")
        self._group, self._address, self._join_token = group, address, join_token
        self._mode, self._pull_url, self._pull_interval = mode, pull_url, interval
        self.pull_path = urlsplit(pull_url).path or "/" if pull_url else ""
        self._token_given = token
        self._weight = weight
        self._workers = workers or 1
        self._worker = worker
        self._worker_dir = Path(worker_dir) if worker_dir else slot_dir(group, address)
        self._slot: Slot | None = None
        self._slot_warned = False
        self._attempts = register_attempts
        self._timeout = timeout
        self._clock = clock
        self._cpus = cpus
        self._route = AdminRoute(urls)
        self.core = Core(
            clock(),
            group=group,
            load=load or LOAD_RATE,
            load_func=load_func,
            top_clients=top_clients,
            worker=worker,
            front_door=front_door,
            interval=interval or DEFAULT_INTERVAL,
        )
        self._cpu: CPUMeter | None = None
        self._lock = threading.Lock()
        self._started = False
        self._closed = False
        self._registered_by_start = False
        self._registered = threading.Event()
        self._failed = threading.Event()
        self._fail_err: Exception | None = None
        self._refusals = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None
        self._astop: asyncio.Event | None = None
        self._report_lock = threading.Lock()
        if token:
            self.core.adopt(Registration(id="", token=token, front_door=front_door))
            self._registered.set()

    # --- state --------------------------------------------------------

    @property
    def worker(self) -> tuple[int, int] | None:
        """(index, count) of this worker of a multi-process replica, once
        started; None for a single process."""
        return self.core.worker

    @property
    def registration(self) -> Registration | None:
        """The current registration (None before the first)."""
        return self.core.registration

    @property
    def front_door(self) -> str:
        """Where rebinds point ("" before the first registration)."""
        return self.core.front_door

    @property
    def advisory(self) -> Advisory:
        """The advisory obeyed now."""
        return self.core.advisory

    @property
    def interval(self) -> float:
        """The report interval in seconds."""
        return self.core.interval

    @property
    def err(self) -> Exception | None:
        """Why the monitor gave up registering, or None."""
        return self._fail_err if self._failed.is_set() else None

    @property
    def failed(self) -> threading.Event:
        """Set when the monitor gives up: the balancer refused
        register_attempts registrations in a row."""
        return self._failed

    def stats(self) -> Stats:
        return Stats(inflight=self.core.inflight, calls=self.core.calls, rebinds=self.core.rebinds)

    def wait_registered(self, timeout: float | None = None) -> Registration:
        """Waits for the first registration; MonitorError when the monitor
        gave up first, TimeoutError after timeout seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._failed.is_set():
                raise MonitorError(str(self._fail_err))
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError("monitor: not registered in time")
            if self._registered.wait(0.05 if left is None else min(left, 0.05)):
                reg = self.core.registration
                assert reg is not None
                return reg

    # --- per call (the middlewares' hot path) --------------------------

    def begin(self, client: str = "", bound: bool = False) -> Call | None:
        """Starts measuring one call; None: answer it with a 307 to
        front_door + path and Fulcrum-Rebind: 1 instead of running it (and
        do not end it). client is its Fulcrum-Client, bound whether it
        carries a Fulcrum-Binding of this group (see owns_binding). A
        worker's call whose close is set runs, answered with Connection:
        close where the server allows it (see Core.begin)."""
        return self.core.begin(client, bound, self._clock())

    def end(self, call: Call) -> None:
        """Finishes a call begun with begin."""
        self.core.end(call, self._clock())

    def owns_binding(self, binding: str) -> bool:
        """Whether a Fulcrum-Binding value names this monitor's group."""
        return self.core.owns_binding(binding)

    def load_probe(self) -> dict[str, float]:
        """The answer to GET /fulcrum/probe: {"rif", "latency_ms"}."""
        return self.core.load_probe()

    # --- lifecycle ----------------------------------------------------

    def _begin_start(self) -> None:
        with self._lock:
            if self._started or self._closed:
                raise MonitorError("monitor: already started or closed")
            self._started = True
        self.core.worker = self._worker
        self._cpu = CPUMeter(self._clock(), self._cpus)

    def start(self) -> None:
        """Registers (unless token was given) and reports, from a daemon
        thread. Does not wait for the balancer; see wait_registered."""
        self._begin_start()
        self._thread = threading.Thread(target=self._run, name="fulcrum-monitor", daemon=True)
        self._thread.start()

    async def astart(self) -> None:
        """As start, from an asyncio task of the running loop."""
        self._begin_start()
        self._astop = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._arun(), name="fulcrum-monitor")

    def close(self, timeout: float = 5.0) -> None:
        """Stops reporting and sending clients back and, if start
        registered the replica (and the monitor did not give up),
        deregisters it. Calls after the first do nothing. Also stops the
        task of a monitor started with astart (from another thread, or
        once its loop has ended: at process exit, say)."""
        if not self._mark_closed():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        task, astop = self._task, self._astop
        if task is not None and astop is not None and not task.done():
            try:
                task.get_loop().call_soon_threadsafe(astop.set)
            except RuntimeError:
                pass  # its loop is closed: the task will not run again
        reg = self._finish_close()
        if reg is not None:
            with httpx.Client(timeout=min(timeout, self._timeout)) as client:
                self._deregister(lambda: _admin.drive(client, _admin.deregister_flow(self._route, self._group, reg)))
        self._release_slot()

    async def aclose(self, timeout: float = 5.0) -> None:
        """As close, for a monitor started with astart (also once the loop
        that ran its task has ended, as under a server without lifespan)."""
        if not self._mark_closed():
            return
        if self._astop is not None:
            self._astop.set()
        task = self._task
        if task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop():
            try:
                await asyncio.wait_for(task, timeout)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
        reg = self._finish_close()
        if reg is not None:
            async with httpx.AsyncClient(timeout=min(timeout, self._timeout)) as client:
                try:
                    await _admin.adrive(client, _admin.deregister_flow(self._route, self._group, reg))
                    log.info("deregistered replica %s", reg.id)
                except Exception as e:  # noqa: BLE001 - logged: closing goes on
                    log.warning("monitor: deregister %s failed: %s", reg.id, e)
        self._release_slot()

    def _mark_closed(self) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            return True

    def _finish_close(self) -> Registration | None:
        """Stops sending clients back and returns the registration to take
        back, if any: not when it was given (token), never made or refused,
        and never a worker's (the replica is its siblings' too), as the Go
        monitor does."""
        self.core.reset_advice()
        reg = self.core.registration
        if self._token_given or self._worker is not None or reg is None or not reg.id:
            return None
        if not self._registered_by_start or self.err is not None:
            return None
        return reg

    def _claim_worker(self) -> float:
        """Claims a worker slot when this is one of several worker
        processes and has none yet: 0 when done (or not needed), else the
        seconds to wait before trying again (every slot is held: the
        server is replacing its workers, and the old ones still run)."""
        if self._worker is not None or self._workers <= 1:
            return 0.0
        try:
            self._slot = claim_slot(self._worker_dir, self._workers)
        except NoFreeSlotError as e:
            if not self._slot_warned:
                self._slot_warned = True
                log.warning("%s; waiting for one to be freed", e)
            return 0.1
        self._worker = (self._slot.index, self._slot.count)
        self.core.worker = self._worker
        log.info("worker %d of %d (slot %s)", self._slot.index, self._slot.count, self._slot.path)
        return 0.0

    def _deregister(self, run: Callable[[], None]) -> None:
        reg = self.core.registration
        try:
            run()
            log.info("deregistered replica %s", reg.id if reg else "")
        except Exception as e:  # noqa: BLE001 - logged: closing goes on
            log.warning("monitor: deregister failed: %s", e)

    def _release_slot(self) -> None:
        if self._slot is not None:
            self._slot.release()
            self._slot = None

    # --- flows --------------------------------------------------------

    def _registration_body(self) -> dict[str, object]:
        spec: dict[str, str] = {"mode": self._mode}
        if self._mode == "pull":
            spec["url"] = self._pull_url
            if self._pull_interval:
                spec["interval"] = f"{max(round(self._pull_interval * 1000), 1)}ms"
        body: dict[str, object] = {"address": self._address, "monitor": spec, "replace": True}
        if self._weight:
            body["weight"] = self._weight
        if self._worker is not None:
            body["worker"] = {"index": self._worker[0], "count": self._worker[1]}
        return body

    def _register_flow(self) -> _admin.Flow[Registration]:
        reg = yield from _admin.register_flow(self._route, self._group, self._registration_body(), self._join_token)
        self.core.adopt(reg)
        self._registered.set()
        log.info("registered replica %s (address %s, front door %s, worker %s)", reg.id, self._address, reg.front_door, self._worker)
        return reg

    def _push_flow(self) -> _admin.Flow[Advisory]:
        reg = self.core.registration
        if reg is None:
            raise NotRegisteredError("monitor: not registered")
        now = self._clock()
        cpu = self._cpu.sample(now) if self._cpu is not None else None
        report = self.core.close_window(now, cpu.share if cpu else None, cpu.other if cpu else None)
        data = json.dumps(report).encode()
        try:
            adv = yield from _admin.report_flow(self._route, reg.token, data)
        except APIError as e:
            if e.status != 401 or not (self._group and self._address):
                raise
            log.warning("balancer rejected the replica token; registering again")
            new = yield from self._register_flow()
            adv = yield from _admin.report_flow(self._route, new.token, data)
        before = self.core.advisory
        if not self.core.apply(adv):
            log.warning("ignoring an advisory of an older term (term %d, epoch %d)", adv.term, adv.epoch)
        elif self.core.advisory is not before and adv.advisory != "nominal":
            log.info("advisory %s (term %d, epoch %d): sending back %s", adv.advisory, adv.term, adv.epoch, self.core.chosen() or "every bound client")
        return adv

    def report_now(self) -> Advisory:
        """Closes the report window, pushes the report and applies the
        advisory answered, which it returns (for tests and applications that
        report on their own schedule). Push mode only."""
        if self._mode != "push":
            raise MonitorError("monitor: reports are pulled in pull mode")
        with self._report_lock, httpx.Client(timeout=self._timeout) as client:
            return _admin.drive(client, self._push_flow())

    def pull(self, advisory: str | None) -> bytes:
        """Serves one of the balancer's pulls: applies the advisory passed in
        its Fulcrum-Advisory header (a malformed one is ignored, with a
        warning), closes the report window and returns the report's JSON.
        The middlewares call it for GETs of pull_url's path; whoever reaches
        that path sets the advisory, so keep it where only the balancer
        can."""
        with self._report_lock:
            if advisory:
                try:
                    adv = decode_advisory(advisory)
                except ValueError as e:
                    log.warning("ignoring a malformed advisory in a pull (header %s): %s", HEADER_ADVISORY, e)
                else:
                    if not self.core.apply(adv):
                        log.warning("ignoring an advisory of an older term (term %d, epoch %d)", adv.term, adv.epoch)
            if self._cpu is None:
                self._cpu = CPUMeter(self._clock(), self._cpus)
            now = self._clock()
            cpu = self._cpu.sample(now)
            report = self.core.close_window(now, cpu.share, cpu.other)
        return json.dumps(report).encode()

    # --- background loops ---------------------------------------------

    def _refused(self, err: Exception) -> bool:
        """Counts a refusal towards register_attempts; True once the monitor
        gives up. Other errors reset the count."""
        refusal = isinstance(err, APIError) and err.refusal
        if isinstance(err, NoAdminError):
            refusal = any(isinstance(e, APIError) and e.refusal for e in err.errors)
        if not refusal:
            self._refusals = 0
            return False
        self._refusals += 1
        if self._refusals == 1:
            log.error("registration refused (group %s needs a join token, the one given is wrong, or the address is blocked): %s", self._group, err)
        if self._attempts < 0 or self._refusals < self._attempts:
            return False
        self._fail_err = MonitorError(f"monitor: gave up registering after {self._refusals} refused attempts: {err}")
        log.error("%s", self._fail_err)
        self._failed.set()
        return True

    def _lifecycle(self) -> _admin.Flow[None]:
        """The monitor's life in the background: claim a worker slot (if
        one of several workers), register (unless given a token), retrying
        with jittered backoff (100 ms doubling to 10 s) and giving up after
        register_attempts refusals; then, in push mode, push a report every
        interval. Returns when the driver says the monitor is stopping."""
        while (wait := self._claim_worker()) > 0:
            if (yield _admin.Wait(wait)):
                return
        if not self._token_given:
            backoff = FIRST_BACKOFF
            while True:
                try:
                    yield from self._register_flow()
                    self._registered_by_start = True
                    break
                except Exception as e:  # noqa: BLE001 - retried
                    if self._refused(e):
                        return
                    wait = backoff / 2 + random.uniform(0, backoff / 2)
                    log.warning("registration failed; retrying in %.2fs: %s", wait, e)
                    if (yield _admin.Wait(wait)):
                        return
                    backoff = min(2 * backoff, MAX_BACKOFF)
        if self._mode != "push":
            return  # the balancer pulls
        failing = False
        while not (yield _admin.Wait(self.core.interval)):
            try:
                with self._report_lock:
                    yield from self._push_flow()
            except Exception as e:  # noqa: BLE001 - retried every interval
                if self._refused(e):
                    return
                if not failing:
                    failing = True
                    log.warning("load report failed; will keep trying every interval: %s", e)
                continue
            if failing:
                failing = False
                log.info("load reports reach the balancer again")

    def _run(self) -> None:
        with httpx.Client(timeout=self._timeout) as client:
            _admin.drive(client, self._lifecycle(), self._stop.wait)

    async def _arun(self) -> None:
        assert self._astop is not None
        stop = self._astop

        async def wait(seconds: float) -> bool:
            try:
                await asyncio.wait_for(stop.wait(), seconds)
            except asyncio.TimeoutError:
                pass
            return stop.is_set()

        async with httpx.AsyncClient(timeout=self._timeout) as client:
            await _admin.adrive(client, self._lifecycle(), wait)
