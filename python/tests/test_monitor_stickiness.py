"""A worker of a multi-process replica and the clients it does not own: the
first call (per advisory) of a client the advisory names but a sibling
worker owns runs and is answered with Connection: close, so that a client
keeping one connection to this worker opens a new one, which the kernel
may give to its owner (docs/python.md "Multi-process servers")."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from conftest import wait_for
from fulcrum_client._monitor_core import Core, Registration
from fulcrum_client.asgi import ASGIMonitor
from fulcrum_client.monitor import Monitor
from fulcrum_client.protocol import worker_of
from fulcrum_client.wire import Advisory, decode_advisory
from monitor_helpers import free_port

FRONT = "http://127.0.0.1:8000"


def owned_by(index: int, count: int, skip: int = 0) -> str:
    """A client id worker_of gives worker index of count (the skip-th)."""
    ids = [f"c{i}" for i in range(100) if worker_of(f"c{i}", count) == index]
    return ids[skip]


def high(epoch: int, *clients: str) -> Advisory:
    return decode_advisory(json.dumps({"advisory": "high", "shed": 1, "epoch": epoch, "clients": list(clients)}))


def test_core_closes_once_per_advisory_for_a_client_it_does_not_own() -> None:
    mine, theirs, also_theirs = owned_by(0, 2), owned_by(1, 2), owned_by(1, 2, 1)
    core = Core(0, group="g", worker=(0, 2))
    core.adopt(Registration(id="r-1", token="t", front_door=FRONT))

    def begin(client: str) -> str:
        c = core.begin(client, True, 1)
        if c is None:
            return "rebind"
        core.end(c, 2)
        return "close" if c.close else "run"

    assert begin(theirs) == "run", "nominal: nothing to close"
    core.apply(high(1, mine, theirs))
    assert [begin(theirs), begin(theirs)] == ["close", "run"], "once per advisory"
    assert [begin(mine), begin(mine)] == ["rebind", "run"], "its own client is sent back, not closed"
    assert begin(also_theirs) == "run", "a sibling's client the advisory does not name"
    core.apply(high(2, theirs))
    unbound = core.begin(theirs, False, 1)
    assert unbound is not None and not unbound.close, "a call not bound in the group: never closed"
    core.end(unbound, 2)
    assert begin(theirs) == "close", "still its first bound call in this advisory"
    core.apply(high(3, theirs, also_theirs))
    assert [begin(theirs), begin(also_theirs), begin(theirs)] == ["close", "close", "run"], "a new advisory: once more"

    single = Core(0, group="g")
    single.adopt(Registration(id="r-1", token="t", front_door=FRONT))
    single.apply(high(1, mine, theirs))
    c = single.begin(theirs, True, 1)
    assert c is None, "a single process owns every client: sent back"


class Uvicorn:
    """uvicorn serving app on a free port, in a thread."""

    def __init__(self, app: ASGIMonitor) -> None:
        self.base = f"http://127.0.0.1:{free_port()}"
        port = int(self.base.rsplit(":", 1)[1])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_for("uvicorn to start", lambda: self.server.started, timeout=10)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        assert not self.thread.is_alive(), "uvicorn did not stop"


async def peer(request: Request) -> PlainTextResponse:
    """The caller's port: which connection the call came on."""
    assert request.client is not None
    return PlainTextResponse(str(request.client.port))


@pytest.fixture
def worker_server() -> Iterator[tuple[Uvicorn, Monitor]]:
    # Worker 0 of 2, registered out of band (token): the advisory is
    # applied by hand; its reports (an hour apart) would go nowhere.
    mon = Monitor(balancer="http://127.0.0.1:1", group="g", token="t", front_door=FRONT, worker=(0, 2), interval=3600)
    app = ASGIMonitor(Starlette(routes=[Route("/who", peer)]), monitor=mon)
    srv = Uvicorn(app)
    yield srv, mon
    srv.stop()
    mon.close(timeout=1)


def test_asgi_worker_answers_connection_close_under_uvicorn(worker_server: tuple[Uvicorn, Monitor]) -> None:
    srv, mon = worker_server
    mine, theirs = owned_by(0, 2), owned_by(1, 2)
    mon.core.apply(high(1, mine, theirs))
    with httpx.Client(base_url=srv.base, timeout=5) as http:

        def call(client: str) -> httpx.Response:
            return http.get("/who", headers={"Fulcrum-Binding": "g/r-1", "Fulcrum-Client": client})

        a, b = call("not-named"), call("not-named")
        assert a.status_code == b.status_code == 200 and a.text == b.text, "a client not named keeps its connection"
        assert a.headers.get("connection", "").lower() != "close"
        c = call(theirs)
        assert c.status_code == 200 and c.text == a.text, "runs, on the same connection"
        assert c.headers["connection"].lower() == "close", "a named client of the sibling: Connection: close"
        d = call(theirs)
        assert d.status_code == 200 and d.text != c.text, "its next call comes on a new connection"
        assert d.headers.get("connection", "").lower() != "close", "once per advisory"
        e = call(mine)
        assert e.status_code == 307 and e.headers["Fulcrum-Rebind"] == "1", "its own named client is sent back"


def test_asgi_leaves_http2_connections_alone() -> None:
    """HTTP/2 forbids Connection headers: over it the call just runs."""
    mon = Monitor(balancer="http://127.0.0.1:1", group="g", token="t", front_door=FRONT, worker=(0, 2), interval=3600)
    mon.core.apply(high(1, owned_by(1, 2)))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ran"})

    mw = ASGIMonitor(app, monitor=mon)
    mw._started = True  # nothing to register: the monitor was given its token

    def call(version: str) -> list[tuple[bytes, bytes]]:
        scope = {"type": "http", "http_version": version, "method": "GET", "path": "/p", "raw_path": b"/p", "query_string": b"",
                 "headers": [(b"fulcrum-binding", b"g/r-1"), (b"fulcrum-client", owned_by(1, 2).encode())]}
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(msg: Any) -> None:
            sent.append(dict(msg))

        asyncio.run(mw(scope, receive, send))
        assert sent[0]["status"] == 200 and sent[1]["body"] == b"ran"
        return list(sent[0]["headers"])

    assert (b"connection", b"close") not in call("2"), "HTTP/2: no Connection header"
    mon.core.apply(high(2, owned_by(1, 2)))
    assert (b"connection", b"close") in call("1.1"), "HTTP/1.1: closed"
