"""The scripted HTTP parties of the shared vector cases (client.json and
monitor_flows.json; see protocol/testdata/README.md), as real local
servers: a party answers its scripted responses in order and records
every request; a refused party is a closed port."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from client_servers import Server, read_body

Subst = Callable[[str], str]


@dataclass
class Seen:
    """A request a party saw."""

    method: str
    target: str
    headers: Any  # email.message.Message: get_all(name)
    body: bytes


class Party:
    """One scripted party. listen() gives it its URL first (scripts name
    each other's URLs), serve(subst) then lets it answer: a response's
    header values, and its body when subst_body, get subst. A response may
    reset the connection (SO_LINGER 0), close it without an answer (FIN),
    or keep it alive; a request beyond the script is answered 599."""

    def __init__(self, name: str, spec: dict[str, Any], *, subst_body: bool = False) -> None:
        self.name = name
        self.spec = spec
        self.url = ""
        self.server: Server | None = None
        self._subst_body = subst_body
        self._subst: Subst = lambda s: s
        self._seen: list[Seen] = []
        self._lock = threading.Lock()

    def listen(self) -> None:
        if self.spec.get("refused"):
            assert not self.spec.get("responses") and not self.spec.get("requests"), (
                f"party {self.name}: a refused party has no responses or requests"
            )
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            self.url = f"http://127.0.0.1:{s.getsockname()[1]}"
            s.close()  # a closed port: connections are refused
            return
        self.server = Server(self._handle)
        self.url = self.server.url

    def serve(self, subst: Subst) -> None:
        self._subst = subst

    def kill(self) -> None:
        if self.server is not None:
            self.server.kill()

    def requests(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        responses = self.spec.get("responses", [])
        body = read_body(h)
        with self._lock:
            n = len(self._seen)
            self._seen.append(Seen(h.command, h.path, h.headers, body))
        if n >= len(responses):
            h.send_response(599)
            h.send_header("Connection", "close")
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        r = responses[n]
        if r.get("reset") or r.get("close_without_response"):
            h.close_connection = True
            if r.get("reset"):
                h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                h.connection.shutdown(socket.SHUT_RDWR)  # FIN, whatever the handler's streams still hold
            h.connection.close()
            return
        text = r.get("body", "")
        data = (self._subst(text) if self._subst_body else text).encode()
        h.send_response(r["status"])
        for k, v in r.get("headers", {}).items():
            h.send_header(k, self._subst(v))
        if not r.get("keep_alive"):
            h.send_header("Connection", "close")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def check(self, subst: Subst, check_body: Callable[[str, Seen, dict[str, Any]], list[str]]) -> list[str]:
        """What differs between the requests seen and the script's: method,
        target and headers (values with subst), absent headers, their
        number; check_body(where, got, want) compares the rest."""
        errs: list[str] = []
        want_all = self.spec.get("requests", [])
        seen = self.requests()
        for i, got in enumerate(seen):
            where = f"party {self.name}: request {i}"
            if i >= len(want_all):
                errs.append(f"party {self.name}: unexpected request {i}: {got.method} {got.target}")
                continue
            want = want_all[i]
            if (got.method, got.target) != (want["method"], subst(want["target"])):
                errs.append(f"{where} is {got.method} {got.target}, want {want['method']} {subst(want['target'])}")
            for k, v in want.get("headers", {}).items():
                g = got.headers.get_all(k) or []
                if g != [subst(v)]:
                    errs.append(f"{where}: header {k} = {g!r}, want {subst(v)!r}")
            for k in want.get("absent", []):
                g = got.headers.get_all(k) or []
                if g:
                    errs.append(f"{where}: header {k} = {g!r}, want it absent")
            errs += check_body(where, got, want)
        if len(seen) < len(want_all):
            errs.append(f"party {self.name}: saw {len(seen)} requests, want {len(want_all)}")
        return errs
