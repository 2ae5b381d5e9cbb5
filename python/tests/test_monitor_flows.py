"""The admin API conversations as data: each flow yields the requests it
would send and is handed the answers, so the routing rules (several admin
URLs, 5xx and unreachable instances, 307 to the leader, 401) are checked
without a network. The real balancer tests cover the same flows end to
end on one instance."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from fulcrum_client._admin import AdminRoute, APIError, NoAdminError, redirect_base, register_flow, report_flow


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


def test_report_follows_a_307_with_its_token_and_stays_there() -> None:
    route = AdminRoute(["http://a:7070", "http://b:7070"])
    sent, adv = play(report_flow(route, "tok", b"{}"), [
        answer(307, headers={"Location": "http://c:7070/v1/report"}),
        answer(200, ADV),
    ])
    assert [str(r.url) for r in sent] == ["http://a:7070/v1/report", "http://c:7070/v1/report"]
    assert all(r.headers["Authorization"] == "Bearer tok" for r in sent)
    assert adv.epoch == 1 and adv.report_interval == 0.25
    assert route.current == "http://c:7070"
    # The next report goes to c first, then the list.
    assert route.order() == ["http://c:7070", "http://a:7070", "http://b:7070"]


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


def test_redirects_are_bounded_and_checked() -> None:
    route = AdminRoute(["http://a:7070"])
    loop = answer(307, headers={"Location": "/v1/report"})
    sent, err = play(report_flow(route, "tok", b"{}"), [loop] * 4)
    assert len(sent) == 4 and "more than 3 redirects" in str(err)
    assert redirect_base("http://a:7070", "http://b:7070/base/v1/report") == "http://b:7070/base"
    for bad in ("", "ftp://b/v1/report", "http://b:7070/elsewhere", "http://b/v1/report?x=1"):
        with pytest.raises(ValueError):
            redirect_base("http://a:7070", bad)


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
