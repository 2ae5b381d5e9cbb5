"""ASGIMonitor: a pure ASGI middleware (no Starlette BaseHTTPMiddleware)
that measures every HTTP call, answers load probes, sends back the clients
an advisory names, and reports from an asyncio task.

    from fulcrum_client import ASGIMonitor
    app = ASGIMonitor(app, balancer="http://127.0.0.1:7070", group="api",
                      address="http://127.0.0.1:9001")

The task starts on the lifespan "startup" event (and the monitor closes,
deregistering the replica, on "shutdown"); under a server that sends no
lifespan events it starts on the first request.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import quote

from fulcrum_client.monitor import Monitor
from fulcrum_client.protocol import HEADER_ADVISORY, HEADER_BINDING, HEADER_CLIENT, HEADER_PROBE

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PROBE_PATH = "/fulcrum/probe"
_BINDING = HEADER_BINDING.lower().encode()
_CLIENT = HEADER_CLIENT.lower().encode()
_PROBE = HEADER_PROBE.lower().encode()
_ADVISORY = HEADER_ADVISORY.lower().encode()


def _headers(scope: Scope) -> tuple[str, str, bool]:
    binding = client = ""
    probe = False
    for k, v in scope.get("headers", ()):
        if k == _BINDING and not binding:
            binding = v.decode("latin-1")
        elif k == _CLIENT and not client:
            client = v.decode("latin-1")
        elif k == _PROBE and v:
            probe = True
    return binding, client, probe


def rebind_location(front_door: str, scope: Scope) -> str:
    """front_door + the call's escaped path and query."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else quote(scope.get("root_path", "") + scope.get("path", "/"))
    if "?" in path:
        path = path.split("?", 1)[0]
    qs = scope.get("query_string", b"")
    return front_door + path + ("?" + qs.decode("latin-1") if qs else "")


class ASGIMonitor:
    """Wraps an ASGI app with a Monitor (given as monitor=, or built from
    the keyword options of Monitor). Calls without a Fulcrum-Binding of the
    group always run; the balancer's health probes (Fulcrum-Probe) run but
    are not counted; GET /fulcrum/probe is answered here, and in pull mode
    GET of the pull URL's path (Monitor.pull)."""

    def __init__(self, app: ASGIApp, monitor: Monitor | None = None, **options: Any) -> None:
        self.app = app
        self.monitor = monitor if monitor is not None else Monitor(**options)
        self._started = False

    async def _ensure_started(self) -> None:
        if not self._started:
            self._started = True
            await self.monitor.astart()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        if kind != "http":
            await self.app(scope, receive, send)
            return
        if not self._started:
            await self._ensure_started()
        path = scope.get("path")
        if path == PROBE_PATH:
            await self._probe(scope, send)
            return
        if path == self.monitor.pull_path:
            await self._pull(scope, send)
            return
        binding, client, probe = _headers(scope)
        if probe:
            await self.app(scope, receive, send)
            return
        mon = self.monitor
        bound = bool(binding) and mon.owns_binding(binding)
        call = mon.begin(client if bound else "", bound)
        if call is None:
            await send({
                "type": "http.response.start",
                "status": 307,
                "headers": [
                    (b"location", rebind_location(mon.front_door, scope).encode("latin-1")),
                    (b"fulcrum-rebind", b"1"),
                    (b"cache-control", b"no-store"),
                    (b"content-length", b"0"),
                ],
            })
            await send({"type": "http.response.body", "body": b""})
            return
        if call.close and scope.get("http_version", "1.1") in ("1.0", "1.1"):
            send = _closing(send)  # HTTP/2 and 3 forbid the header
        try:
            await self.app(scope, receive, send)
        finally:
            mon.end(call)

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Passes the lifespan to the app, starting the monitor after the
        app's startup and closing it before the app's shutdown. An app that
        does not speak lifespan still gets the monitor started and closed."""
        received = False

        async def wrapped_receive() -> Message:
            nonlocal received
            received = True
            msg = await receive()
            if msg["type"] == "lifespan.shutdown":
                await self.monitor.aclose()
            return msg

        async def wrapped_send(msg: Message) -> None:
            if msg["type"] == "lifespan.startup.complete":
                await self._ensure_started()
            await send(msg)

        try:
            await self.app(scope, wrapped_receive, wrapped_send)
        except Exception:
            if received:
                raise  # the app's own lifespan failed: the server reports it
            # The app does not speak lifespan: serve it ourselves.
            await self._own_lifespan(receive, send)

    async def _own_lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                await self._ensure_started()
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                await self.monitor.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _probe(self, scope: Scope, send: Send) -> None:
        if scope.get("method") not in ("GET", "HEAD"):
            await _not_get(send, "load probes are GET requests")
            return
        await _json(scope, send, json.dumps(self.monitor.load_probe()).encode())

    async def _pull(self, scope: Scope, send: Send) -> None:
        if scope.get("method") not in ("GET", "HEAD"):
            await _not_get(send, "pulls are GET requests")
            return
        header = ""
        for k, v in scope.get("headers", ()):
            if k == _ADVISORY:
                header = v.decode("latin-1")
                break
        await _json(scope, send, self.monitor.pull(header))


def _closing(send: Send) -> Send:
    """send, adding Connection: close to the response's start (a worker
    letting a client it does not own reach another worker; uvicorn and
    hypercorn close the connection after such a response)."""

    async def wrapped(msg: Message) -> None:
        if msg["type"] == "http.response.start":
            msg = dict(msg)
            msg["headers"] = [*msg.get("headers", ()), (b"connection", b"close")]
        await send(msg)

    return wrapped


async def _not_get(send: Send, message: str) -> None:
    body = json.dumps({"error": {"code": "method_not_allowed", "message": message}}).encode()
    await send({"type": "http.response.start", "status": 405, "headers": [
        (b"allow", b"GET, HEAD"), (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _json(scope: Scope, send: Send, body: bytes) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"), (b"cache-control", b"no-store"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else body})
