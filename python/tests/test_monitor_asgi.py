"""ASGIMonitor on a Starlette app under a real uvicorn server (in a thread
of the test process, so that the test can read the advisory the monitor
obeys), as a replica of a real fulcrum."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from conftest import Balancer, wait_for
from fulcrum_client import ASGIMonitor
from fulcrum_client.asgi import Receive, Scope, Send
from monitor_helpers import bound_call, check_one_rebind_per_advisory, free_port, replica, reported

GROUP = "api"


async def work(request: Request) -> PlainTextResponse:
    await asyncio.sleep(0.002)  # the call's own work: 2 ms of latency
    return PlainTextResponse("ok " + request.url.query)


class Server:
    """uvicorn serving app on a free port, in a thread; stopped by stop()."""

    def __init__(self, app: Any, port: int, lifespan: Literal["auto", "on", "off"] = "on") -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, lifespan=lifespan, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_for("uvicorn to start", lambda: self.server.started, timeout=10)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        assert not self.thread.is_alive(), "uvicorn did not stop"


@pytest.fixture
def starlette_replica(balancer: Balancer) -> Iterator[tuple[Server, ASGIMonitor]]:
    balancer.create_group(GROUP, report_interval="100ms")
    port = free_port()
    app = ASGIMonitor(Starlette(routes=[Route("/work", work)]), balancer=balancer.admin, group=GROUP,
                      address=f"http://127.0.0.1:{port}", interval=0.1)
    srv = Server(app, port)
    yield srv, app
    if srv.thread.is_alive():
        srv.stop()


def test_starlette_replica_registers_reports_and_sends_named_clients_back_once(
    balancer: Balancer, starlette_replica: tuple[Server, ASGIMonitor]
) -> None:
    srv, app = starlette_replica
    mon = app.monitor
    reg = mon.wait_registered(10)
    assert mon.front_door == balancer.group(GROUP)["advertise"].rstrip("/")
    assert replica(balancer, GROUP, srv.base)["id"] == reg.id  # type: ignore[index]

    with httpx.Client(timeout=5) as http:
        # Load probes are answered by the middleware and are not calls.
        probe = http.get(srv.base + "/fulcrum/probe").json()
        assert set(probe) == {"rif", "latency_ms"}

        def traffic() -> object:
            for _ in range(5):
                assert bound_call(http, srv.base, GROUP, reg.id, "c-1").status_code == 200
            return reported(balancer, GROUP, srv.base)

        status = wait_for("a report with rps and latency in the replica's status", traffic)
    assert status["source"] == "report"
    assert status["latency_p50_ms"] >= 2.0 and status["latency_p99_ms"] >= status["latency_p50_ms"]
    assert status["bound_clients"] >= 1
    assert status["metrics"]["cpu"] >= 0

    stop = threading.Event()
    check_one_rebind_per_advisory(balancer, GROUP, srv.base, mon, reg.id, lambda: stop.wait(0.005))
    assert mon.stats().rebinds >= 1

    # Shutting the server down closes the monitor: the replica deregisters
    # (it drains, then goes).
    srv.stop()
    wait_for("the replica to drain or go", lambda: (replica(balancer, GROUP, srv.base) or {"state": "gone"})["state"] in ("draining", "gone"))


def test_replica_removed_by_the_balancer_registers_again(
    balancer: Balancer, starlette_replica: tuple[Server, ASGIMonitor]
) -> None:
    srv, app = starlette_replica
    first = app.monitor.wait_registered(10)
    balancer.api.delete(f"/v1/groups/{GROUP}/replicas/{first.id}").raise_for_status()

    def again() -> object:
        reg = app.monitor.registration
        return reg is not None and reg.token != first.token and replica(balancer, GROUP, srv.base)

    wait_for("the monitor to register again after a 401", again)


def test_without_lifespan_the_monitor_starts_on_the_first_request(balancer: Balancer) -> None:
    balancer.create_group(GROUP, report_interval="100ms")
    port = free_port()
    app = ASGIMonitor(Starlette(routes=[Route("/work", work)]), balancer=balancer.admin, group=GROUP,
                      address=f"http://127.0.0.1:{port}", interval=0.1)
    srv = Server(app, port, lifespan="off")
    try:
        assert app.monitor.registration is None
        assert httpx.get(srv.base + "/work").status_code == 200
        reg = app.monitor.wait_registered(10)
        assert replica(balancer, GROUP, srv.base)["id"] == reg.id  # type: ignore[index]
    finally:
        srv.stop()
        asyncio.run(app.monitor.aclose())
    gone = (replica(balancer, GROUP, srv.base) or {"state": "gone"})["state"]
    assert gone in ("draining", "gone")


def test_pull_mode_replica_is_pulled_and_obeys_the_advisory_passed(balancer: Balancer) -> None:
    balancer.create_group(GROUP, report_interval="100ms")
    port = free_port()
    app = ASGIMonitor(Starlette(routes=[Route("/work", work)]), balancer=balancer.admin, group=GROUP,
                      address=f"http://127.0.0.1:{port}", mode="pull", interval=0.1)
    srv = Server(app, port)
    try:
        reg = app.monitor.wait_registered(10)
        status = replica(balancer, GROUP, srv.base)
        assert status is not None and status["monitor"] == "pull"
        with httpx.Client(timeout=5) as http:
            def traffic() -> object:
                for _ in range(5):
                    assert bound_call(http, srv.base, GROUP, reg.id, "c-1").status_code == 200
                return reported(balancer, GROUP, srv.base)

            wait_for("a pulled report with rps and latency", traffic)
        # Draining the replica reaches the monitor in the next pull's
        # Fulcrum-Advisory header: every bound call is then sent back.
        balancer.api.post(f"/v1/groups/{GROUP}/replicas/{reg.id}/drain").raise_for_status()
        wait_for("the drain advisory in a pull", lambda: app.monitor.advisory.advisory == "drain")
        with httpx.Client(timeout=5) as http:
            r = bound_call(http, srv.base, GROUP, reg.id, "c-1")
        assert r.status_code == 307 and r.headers["Fulcrum-Rebind"] == "1"
    finally:
        srv.stop()


def test_an_app_without_lifespan_support_still_starts_and_closes_the_monitor(balancer: Balancer) -> None:
    balancer.create_group(GROUP, report_interval="100ms")

    async def plain(scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http", "no lifespan here"
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    port = free_port()
    app = ASGIMonitor(plain, balancer=balancer.admin, group=GROUP, address=f"http://127.0.0.1:{port}", interval=0.1)
    srv = Server(app, port, lifespan="on")
    try:
        reg = app.monitor.wait_registered(10)  # started on the lifespan's startup, before any request
        assert replica(balancer, GROUP, srv.base)["id"] == reg.id  # type: ignore[index]
    finally:
        srv.stop()
    gone = (replica(balancer, GROUP, srv.base) or {"state": "gone"})["state"]
    assert gone in ("draining", "gone")  # closed on the lifespan's shutdown
