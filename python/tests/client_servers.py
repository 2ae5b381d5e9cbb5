"""Real local HTTP servers (stdlib http.server on loopback sockets, each in
its own thread) standing in for replicas and on-demand front doors in the
client tests, as client/fakes_test.go does for the Go client."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

GROUP = "g"


class Server:
    """A ThreadingHTTPServer (HTTP/1.1, keep-alive) on a free loopback port
    whose handle(handler) answers every request. kill() closes the
    listener and every open connection, as a killed process would: later
    connections are refused."""

    def __init__(self, handle: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.accepted = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with outer._lock:
                    outer._conns.add(self.connection)
                    outer.accepted += 1

            def finish(self) -> None:
                with outer._lock:
                    outer._conns.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def _any(self) -> None:
                handle(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        self._dead = False

    def kill(self) -> None:
        if self._dead:
            return
        self._dead = True
        self.httpd.shutdown()
        self.httpd.server_close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()


def read_body(h: BaseHTTPRequestHandler) -> bytes:
    """The request's body: Content-Length or chunked."""
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        out = b""
        while True:
            size = int(h.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return out
            out += h.rfile.read(size)
            h.rfile.readline()
    n = int(h.headers.get("Content-Length") or 0)
    return h.rfile.read(n) if n else b""


def reply(
    h: BaseHTTPRequestHandler, status: int, body: bytes = b"", headers: dict[str, str] | None = None
) -> None:
    h.send_response(status)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    if body and h.command != "HEAD":
        h.wfile.write(body)


@dataclass(frozen=True)
class Ran:
    """One call a replica ran."""

    path: str
    body: str
    binding: str
    client: str


class Replica:
    """A replica: it answers "<id>:<body>" and records what each call
    carried. Knobs (set under no lock; read once per call):
    rebinds — how many of the next bound calls to send back (307 with
    Fulcrum-Rebind: 1, not run); unavailable — how many of the next calls
    to answer 503 (they run); crash — run every call, then close the
    connection unanswered."""

    def __init__(self, id: str, prefix: str = "") -> None:
        self.id = id
        self.prefix = prefix
        self.front_door = ""
        self.rebinds = 0
        self.rebind_once: set[str] | None = None
        self.unavailable = 0
        self.crash = False
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._runs: list[Ran] = []
        self.server = Server(self._serve)

    @property
    def base(self) -> str:
        return self.server.url + self.prefix

    def ran(self) -> list[Ran]:
        with self._lock:
            return list(self._runs)

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        binding = h.headers.get("Fulcrum-Binding", "")
        with self._lock:
            self.headers.append(dict(h.headers.items()))
            send_back = False
            if binding:
                if self.rebinds > 0:
                    self.rebinds -= 1
                    send_back = True
                key = parse_qs(urlsplit(h.path).query).get("rebind", [""])[0]
                if key and self.rebind_once is not None and key not in self.rebind_once:
                    self.rebind_once.add(key)
                    send_back = True
        if send_back:
            read_body(h)
            reply(h, 307, headers={"Location": self.front_door + h.path, "Fulcrum-Rebind": "1"})
            return
        body = read_body(h)
        with self._lock:
            self._runs.append(Ran(h.path, body.decode(), binding, h.headers.get("Fulcrum-Client", "")))
            crash = self.crash
            unavailable = self.unavailable > 0
            if unavailable:
                self.unavailable -= 1
        if crash:
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        if unavailable:
            reply(h, 503)
            return
        reply(h, 200, f"{self.id}:".encode() + body, {"Served-By": self.id})


class FrontDoor:
    """An on-demand front door: 307 to the replica pick(n) chooses for its
    n-th request (default round-robin over the replicas); unavailable is
    how many of the next requests get its own 503 (fulcrum's JSON error,
    code no_replica). It records each request's Fulcrum-Client and its
    rebind hint, "<Fulcrum-Rebind> <Fulcrum-Binding>"."""

    def __init__(self, *replicas: Replica) -> None:
        self._lock = threading.Lock()
        self.hits = 0
        self.clients: list[str] = []
        self.hints: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.unavailable = 0
        self.pick: Callable[[int], Replica] = lambda n: replicas[n % len(replicas)]
        self.server = Server(self._serve)
        self.url = self.server.url
        for r in replicas:
            r.front_door = self.url

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        read_body(h)
        with self._lock:
            n = self.hits
            self.hits += 1
            self.clients.append(h.headers.get("Fulcrum-Client", ""))
            self.hints.append(h.headers.get("Fulcrum-Rebind", "") + " " + h.headers.get("Fulcrum-Binding", ""))
            self.headers.append(dict(h.headers.items()))
            unavailable = self.unavailable > 0
            if unavailable:
                self.unavailable -= 1
            pick = self.pick
        if unavailable:
            body = json.dumps(
                {"error": {"code": "no_replica", "message": "no replica can serve this request", "group": GROUP}}
            ).encode()
            reply(h, 503, body, {"Content-Type": "application/json", "Fulcrum-Group": GROUP})
            return
        r = pick(n)
        reply(h, 307, headers={"Location": r.base + h.path, "Fulcrum-Group": GROUP, "Fulcrum-Replica": r.id})

    def hit_count(self) -> int:
        with self._lock:
            return self.hits


class Net:
    """The servers of one test; all killed at its end."""

    def __init__(self) -> None:
        self._servers: list[Server] = []

    def replica(self, id: str, prefix: str = "") -> Replica:
        r = Replica(id, prefix)
        self._servers.append(r.server)
        return r

    def front_door(self, *replicas: Replica) -> FrontDoor:
        fd = FrontDoor(*replicas)
        self._servers.append(fd.server)
        return fd

    def server(self, handle: Callable[[BaseHTTPRequestHandler], None]) -> Server:
        s = Server(handle)
        self._servers.append(s)
        return s

    def close(self) -> None:
        for s in self._servers:
            s.kill()


class Log:
    """A replicated group's log shared by fake bridges: it appends each call
    once, keyed by its Fulcrum-Session and Fulcrum-Sequence."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.positions: dict[tuple[str, str], int] = {}

    def append(self, session: str, seq: str) -> tuple[int, bool]:
        """The call's position, and whether it was there already."""
        with self._lock:
            key = (session, seq)
            if key in self.positions:
                return self.positions[key], True
            self.positions[key] = len(self.positions) + 1
            return self.positions[key], False


@dataclass(frozen=True)
class BridgeCall:
    """One call a fake bridge received, and what became of it: "answered",
    "dropped" (appended, connection closed unanswered), "cut" (appended,
    answer cut short) or "busy" (503 with Retry-After, not appended)."""

    session: str
    seq: str
    client: str
    body: str
    outcome: str
    existed: bool


class Bridge:
    """A replicated group's front door (binding replicated): it orders each
    call in the shared log and answers "<name>:<body>" with
    Fulcrum-Position. Knobs: drop, cut, busy — how many of the next calls
    fail that way."""

    def __init__(self, name: str, log: Log) -> None:
        self.name, self.log = name, log
        self.drop = self.cut = self.busy = 0
        self._lock = threading.Lock()
        self._calls: list[BridgeCall] = []
        self.server = Server(self._serve)
        self.url = self.server.url

    def calls(self) -> list[BridgeCall]:
        with self._lock:
            return list(self._calls)

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        body = read_body(h).decode()
        session, seq = h.headers.get("Fulcrum-Session", ""), h.headers.get("Fulcrum-Sequence", "")
        with self._lock:
            outcome = "answered"
            for knob in ("busy", "drop", "cut"):
                if getattr(self, knob) > 0:
                    setattr(self, knob, getattr(self, knob) - 1)
                    outcome = {"busy": "busy", "drop": "dropped", "cut": "cut"}[knob]
                    break
        existed, pos = False, 0
        if outcome != "busy":
            pos, existed = self.log.append(session, seq)
        with self._lock:
            self._calls.append(BridgeCall(session, seq, h.headers.get("Fulcrum-Client", ""), body, outcome, existed))
        if outcome == "busy":
            reply(h, 503, f"{self.name} busy".encode(), {"Retry-After": "1"})
        elif outcome == "dropped":
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
        elif outcome == "cut":
            text = f"{self.name}:{body}".encode()
            h.send_response(200)
            h.send_header("Fulcrum-Position", str(pos))
            h.send_header("Content-Length", str(len(text) + 100))
            h.end_headers()
            h.wfile.write(text)
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
        else:
            reply(h, 200, f"{self.name}:{body}".encode(), {"Fulcrum-Position": str(pos)})
