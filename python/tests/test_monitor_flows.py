"""The admin API conversations as data: each flow yields the requests it
would send and is handed the answers, so the routing rules (several admin
URLs, 5xx and unreachable instances, 307 to the leader, 401) are checked
without a network. The real balancer tests cover the same flows end to
end on one instance; the conversations both monitors must hold (307 to the
leader followed with the token, the redirect limit and refused Locations,
failover, re-registration) are the shared vectors of
protocol/testdata/monitor_flows.json (test_vectors_monitor_flows.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from fulcrum_client._admin import AdminRoute, APIError, NoAdminError, Wait, register_flow, report_flow
from fulcrum_client.monitor import Monitor


def answer(status: int, body: Any = None, headers: dict[str, str] | None = None) -> httpx.Response:
    content = b"" if body is None else json.dumps(body).encode()
    return httpx.Response(status, content=content, headers=headers)


ADV = {"advisory": "nominal", "shed": 0, "term": 0, "epoch": 1, "report_interval": "250ms"}
REG = {"id": "r-1", "token": "frt_x", "front_door": "http://fd:8000/", "report_interval": "100ms"}


def play(flow: Any, answers: list[httpx.Response | Exception]) -> tuple[list[httpx.Request], Any]:
    """Runs a flow against scripted answers; returns what it sent and its
    result (or the exception it raised, as the result)."""
    sent: list[httpx.Request] = []
    try:
        req = next(flow)
        for a in answers:
            sent.append(req)
            req = flow.throw(a) if isinstance(a, Exception) else flow.send(a)
        raise AssertionError(f"flow wants more answers after {[str(r.url) for r in sent]}")
    except StopIteration as done:
        return sent, done.value
    except (APIError, NoAdminError, ConnectionError) as e:
        return sent, e


def test_report_moves_on_from_unreachable_and_5xx_but_not_4xx() -> None:
    route = AdminRoute(["http://a:7070", "http://b:7070", "http://c:7070"])
    sent, adv = play(report_flow(route, "tok", b"{}"), [
        httpx.ConnectError("refused"),
        answer(503, {"error": {"code": "no_leader", "message": "no leader"}}),
        answer(200, ADV),
    ])
    assert len(sent) == 3 and adv.epoch == 1 and route.current == "http://c:7070"
    sent, err = play(report_flow(route, "tok", b"{}"), [answer(401, {"error": {"code": "unauthorized", "message": "unknown token"}})])
    assert len(sent) == 1 and isinstance(err, APIError) and err.status == 401 and err.code == "unauthorized"
    sent, err = play(report_flow(AdminRoute(["http://a:7070", "http://b:7070"]), "tok", b"{}"),
                     [httpx.ConnectError("x"), httpx.ReadTimeout("y")])
    assert isinstance(err, NoAdminError) and len(err.errors) == 2


def test_register_sends_the_join_token_and_tries_the_next_admin() -> None:
    route = AdminRoute(["http://a:7070", "http://b:7070"])
    body = {"address": "http://r:1", "monitor": {"mode": "push"}, "replace": True, "worker": {"index": 1, "count": 2}}
    sent, reg = play(register_flow(route, "my group", body, "join"), [httpx.ConnectError("x"), answer(201, REG)])
    assert str(sent[1].url) == "http://b:7070/v1/groups/my%20group/replicas"
    assert sent[1].headers["Authorization"] == "Bearer join"
    assert json.loads(sent[1].content) == body
    assert (reg.id, reg.token, reg.front_door, reg.report_interval) == ("r-1", "frt_x", "http://fd:8000/", 0.1)
    sent, err = play(register_flow(route, "g", body, ""), [answer(401, {"error": {"code": "unauthorized"}})])
    assert isinstance(err, APIError) and err.refusal


def test_lifecycle_retries_registration_then_reports_every_interval() -> None:
    mon = Monitor(balancer="http://a:7070", group="g", address="http://r:1", workers=1, interval=0.2)
    flow = mon._lifecycle()
    step = next(flow)
    assert isinstance(step, httpx.Request) and step.url.path == "/v1/groups/g/replicas"
    step = flow.throw(httpx.ConnectError("refused"))  # not up yet: back off
    assert isinstance(step, Wait) and 0.05 <= step.seconds <= 0.1
    step = flow.send(False)
    assert isinstance(step, httpx.Request)
    step = flow.send(answer(503, {"error": {"code": "unavailable"}}))  # 5xx: back off, doubled
    assert isinstance(step, Wait) and 0.1 <= step.seconds <= 0.2
    step = flow.send(False)
    step = flow.send(answer(201, REG))  # registered: the group's interval from now on
    assert mon.registration is not None and mon.registration.token == "frt_x"
    assert step == Wait(0.1)
    step = flow.send(False)
    assert isinstance(step, httpx.Request) and step.url.path == "/v1/report"
    assert step.headers["Authorization"] == "Bearer frt_x"
    step = flow.send(answer(200, {**ADV, "advisory": "drain", "epoch": 2}))
    assert step == Wait(0.25) and mon.advisory.advisory == "drain"  # the advisory's interval, adopted
    with pytest.raises(StopIteration):
        flow.send(True)  # stopping


def test_lifecycle_gives_up_after_refusals() -> None:
    mon = Monitor(balancer="http://a:7070", group="g", address="http://r:1", workers=1, register_attempts=2)
    flow = mon._lifecycle()
    next(flow)
    step = flow.send(answer(403, {"error": {"code": "blocked", "message": "address blocked"}}))
    assert isinstance(step, Wait) and not mon.failed.is_set()
    flow.send(False)
    with pytest.raises(StopIteration):
        flow.send(answer(403, {"error": {"code": "blocked"}}))
    assert mon.failed.is_set() and "gave up registering after 2 refused attempts" in str(mon.err)
