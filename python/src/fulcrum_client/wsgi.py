"""WSGIMonitor: a PEP 3333 middleware that measures every call, answers
load probes, sends back the clients an advisory names, and reports from a
daemon thread.

    from fulcrum_client import WSGIMonitor
    app.wsgi_app = WSGIMonitor(app.wsgi_app, balancer="http://127.0.0.1:7070",
                               group="api", address="http://127.0.0.1:9001")

The monitor starts (registering in the background) when the middleware is
made, or, when made with start=False, on the first call; an atexit hook
closes it (deregistering the replica) when the process exits. Under a
forking server, make the middleware in the worker (gunicorn's default: the
app is imported by each worker; not with --preload).
"""

from __future__ import annotations

import atexit
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import quote

from fulcrum_client.monitor import Call, Monitor
from fulcrum_client.protocol import HEADER_REBIND

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]

PROBE_PATH = "/fulcrum/probe"


def rebind_location(front_door: str, environ: Environ) -> str:
    """front_door + the call's escaped path and query."""
    raw = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or "")
    if raw.startswith("/"):
        return front_door + raw
    # PEP 3333: the path is the request's bytes decoded as latin-1.
    path = str(environ.get("SCRIPT_NAME", "")) + str(environ.get("PATH_INFO", "/"))
    qs = str(environ.get("QUERY_STRING", ""))
    return front_door + quote(path.encode("latin-1"), safe="/:@!$&'()*+,;=-._~") + ("?" + qs if qs else "")


class _Finish(Iterable[bytes]):
    """The app's response iterable, ending the call when the server closes
    it (PEP 3333: the call lasts until close)."""

    def __init__(self, body: Iterable[bytes], done: Callable[[], None]) -> None:
        self._body = body
        self._done = done

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._body)

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            self._done()


class WSGIMonitor:
    """Wraps a WSGI app with a Monitor (given as monitor=, or built from the
    keyword options of Monitor). Calls without a Fulcrum-Binding of the
    group always run; the balancer's health probes (Fulcrum-Probe) run but
    are not counted; GET /fulcrum/probe is answered here, and in pull mode
    GET of the pull URL's path (Monitor.pull).

    Unlike ASGIMonitor, a worker's WSGIMonitor cannot answer a client it
    does not own with Connection: close (PEP 3333 forbids hop-by-hop
    headers, and gunicorn drops them); gunicorn's sync workers close every
    connection anyway."""

    def __init__(self, app: WSGIApp, monitor: Monitor | None = None, start: bool = True, **options: Any) -> None:
        self.app = app
        self.monitor = monitor if monitor is not None else Monitor(**options)
        self._lock = threading.Lock()
        self._started = False
        if start:
            self._start()

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        self.monitor.start()
        atexit.register(self.monitor.close)

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        if not self._started:
            self._start()
        path = environ.get("PATH_INFO")
        if path == PROBE_PATH:
            return self._probe(environ, start_response)
        if path == self.monitor.pull_path:
            return self._pull(environ, start_response)
        if environ.get("HTTP_FULCRUM_PROBE"):
            return self.app(environ, start_response)
        mon = self.monitor
        binding = environ.get("HTTP_FULCRUM_BINDING", "")
        bound = bool(binding) and mon.owns_binding(binding)
        call = mon.begin(environ.get("HTTP_FULCRUM_CLIENT", "") if bound else "", bound)
        if call is None:
            start_response("307 Temporary Redirect", [
                ("Location", rebind_location(mon.front_door, environ)),
                (HEADER_REBIND, "1"),
                ("Cache-Control", "no-store"),
                ("Content-Length", "0"),
            ])
            return [b""]
        return self._run(call, environ, start_response)

    def _run(self, call: Call, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        ended = False

        def done() -> None:
            nonlocal ended
            if not ended:
                ended = True
                self.monitor.end(call)

        try:
            body = self.app(environ, start_response)
        except BaseException:
            done()
            raise
        return _Finish(body, done)

    def _probe(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return _not_get(start_response, "load probes are GET requests")
        return _json(environ, start_response, json.dumps(self.monitor.load_probe()).encode())

    def _pull(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return _not_get(start_response, "pulls are GET requests")
        return _json(environ, start_response, self.monitor.pull(environ.get("HTTP_FULCRUM_ADVISORY", "")))


def _not_get(start_response: StartResponse, message: str) -> Iterable[bytes]:
    body = json.dumps({"error": {"code": "method_not_allowed", "message": message}}).encode()
    start_response("405 Method Not Allowed", [
        ("Allow", "GET, HEAD"), ("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _json(environ: Environ, start_response: StartResponse, body: bytes) -> Iterable[bytes]:
    start_response("200 OK", [
        ("Content-Type", "application/json"), ("Cache-Control", "no-store"), ("Content-Length", str(len(body)))])
    return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else body]
