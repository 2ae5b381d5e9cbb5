"""The behaviour cases of protocol/testdata/advisories.json (what a monitor
does with the advisories it gets), run against the monitor's pure core and
through both middlewares, called directly, with the registration given as
a token and front door so that no balancer is needed. Through the
middlewares each advisory arrives as the Go runner (monitor/vectors_test.go)
passes it: in the Fulcrum-Advisory header of a pull, answered with the
report; a worker's case (push mode only) applies it as a push's answer is."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, MutableMapping
from typing import Any

import pytest

from fulcrum_client import ASGIMonitor, WSGIMonitor
from fulcrum_client._monitor_core import Core, Registration
from fulcrum_client.monitor import Monitor
from fulcrum_client.wire import decode_advisory
from vectors import ids, load

FRONT = "http://127.0.0.1:8000"
CASES = [c for c in load("advisories", {"body", "error", "advisory", "worker", "steps"}) if "steps" in c]
STEP_KEYS = {"apply", "call", "expect", "close", "doc"}


def worker_of_case(case: dict[str, Any]) -> tuple[int, int] | None:
    w = case.get("worker")
    return None if w is None else (w["index"], w["count"])


def play(case: dict[str, Any], apply: Callable[[dict[str, Any]], object], call: Callable[[str], str], closes: bool = True) -> None:
    """Runs a case's steps: apply each advisory (decoded as the monitor
    decodes answers), and check each bound call's outcome: "rebind", or
    "run" ("run+close" when answered with Connection: close; with closes
    False, a runner that cannot set it, only "run" and "rebind")."""
    for i, step in enumerate(case["steps"]):
        assert set(step) <= STEP_KEYS and ("apply" in step) != ("call" in step), f"step {i}: {sorted(step)}"
        if "apply" in step:
            apply(step["apply"])
            continue
        assert step["expect"] in ("run", "rebind"), f"step {i}: expect {step['expect']!r}"
        got = call(step["call"])
        if got == "run+close" or (got == "run" and closes):
            closed = got == "run+close"
            want = step.get("close")
            assert want is None or closed == want, f"step {i} ({step.get('doc', '')}): call of {step['call']}: Connection: close {closed}, want {want}"
            got = "run"
        assert got == step["expect"], f"step {i} ({step.get('doc', '')}): call of {step['call']} {got}, want {step['expect']}"


def decoded(adv: dict[str, Any]) -> Any:
    return decode_advisory(json.dumps(adv))


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_core(case: dict[str, Any]) -> None:
    core = Core(0, group="g", worker=worker_of_case(case))
    core.adopt(Registration(id="r-1", token="t", front_door=FRONT))

    def call(client: str) -> str:
        c = core.begin(client, core.owns_binding("g/r-1"), 1)
        if c is None:
            return "rebind"
        core.end(c, 2)
        return "run+close" if c.close else "run"

    play(case, lambda adv: core.apply(decoded(adv)), call)


def monitor(case: dict[str, Any]) -> Monitor:
    worker = worker_of_case(case)
    if worker is not None:
        return Monitor(balancer="http://127.0.0.1:1", group="g", token="t", front_door=FRONT, worker=worker)
    return Monitor(mode="pull", pull_url="http://127.0.0.1:1/fulcrum/report", group="g", token="t", front_door=FRONT)


def check_report(body: bytes) -> None:
    report = json.loads(body)
    assert set(report) <= {"load", "metrics", "clients", "worker"} and report["load"] >= 0



@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_asgi(case: dict[str, Any]) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ran"})

    mw = ASGIMonitor(app, monitor=monitor(case))
    mw._started = True  # nothing to register: the monitor was given its token

    def call(client: str) -> str:
        scope = {"type": "http", "method": "GET", "path": "/p", "raw_path": b"/p", "query_string": b"a=1",
                 "headers": [(b"fulcrum-binding", b"g/r-1"), (b"fulcrum-client", client.encode())]}
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(msg: MutableMapping[str, Any]) -> None:
            sent.append(dict(msg))

        asyncio.run(mw(scope, receive, send))
        start = sent[0]
        if start["status"] == 307:
            h = dict(start["headers"])
            assert h[b"location"] == (FRONT + "/p?a=1").encode() and h[b"fulcrum-rebind"] == b"1"
            return "rebind"
        assert start["status"] == 200 and sent[1]["body"] == b"ran"
        return "run+close" if (b"connection", b"close") in start["headers"] else "run"

    def pull(adv: dict[str, Any]) -> None:
        if worker_of_case(case) is not None:
            mw.monitor.core.apply(decoded(adv))
            return
        scope = {"type": "http", "method": "GET", "path": "/fulcrum/report", "raw_path": b"/fulcrum/report",
                 "query_string": b"", "headers": [(b"fulcrum-advisory", json.dumps(adv).encode())]}
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(msg: MutableMapping[str, Any]) -> None:
            sent.append(dict(msg))

        asyncio.run(mw(scope, receive, send))
        assert sent[0]["status"] == 200
        check_report(sent[1]["body"])

    play(case, pull, call)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_wsgi(case: dict[str, Any]) -> None:
    def app(environ: Any, start_response: Any) -> list[bytes]:
        start_response("200 OK", [])
        return [b"ran"]

    mw = WSGIMonitor(app, monitor=monitor(case), start=False)
    mw._started = True  # nothing to register: the monitor was given its token

    def call(client: str) -> str:
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/p", "QUERY_STRING": "a=1",
                   "HTTP_FULCRUM_BINDING": "g/r-1", "HTTP_FULCRUM_CLIENT": client}
        status: list[str] = []
        headers: dict[str, str] = {}

        def start_response(s: str, h: list[tuple[str, str]]) -> None:
            status.append(s)
            headers.update(h)

        body = mw(environ, start_response)
        out = b"".join(body)
        getattr(body, "close", lambda: None)()
        if status[0].startswith("307"):
            assert headers["Location"] == FRONT + "/p?a=1" and headers["Fulcrum-Rebind"] == "1"
            return "rebind"
        assert status[0] == "200 OK" and out == b"ran"
        return "run"

    def pull(adv: dict[str, Any]) -> None:
        if worker_of_case(case) is not None:
            mw.monitor.core.apply(decoded(adv))
            return
        status: list[str] = []
        body = mw({"REQUEST_METHOD": "GET", "PATH_INFO": "/fulcrum/report", "HTTP_FULCRUM_ADVISORY": json.dumps(adv)},
                  lambda s, h: status.append(s))
        assert status == ["200 OK"]
        check_report(b"".join(body))

    play(case, pull, call, closes=False)
    assert mw.monitor.stats().inflight == 0
