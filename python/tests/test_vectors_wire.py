"""Runs the shared wire test vectors (protocol/testdata/, see its README.md)
that are data only: reports, advisory decoding, registration answers, the
worker split; and the registration requests against a real balancer. The
Go tests run the same files, so the two implementations cannot drift."""

from __future__ import annotations

import math
from typing import Any

import httpx
import pytest

from fulcrum_client.protocol import client_hash, worker_of
from fulcrum_client.wire import (
    FieldError,
    decode_advisory,
    decode_registration_answer,
    decode_report,
)
from vectors import build_body, ids, load

REPORTS = load("reports", {"body", "expand", "pad_to", "error", "report"})
ADVISORIES = load("advisories", {"body", "error", "advisory", "worker", "steps"})
ADVISORY_DECODES = [c for c in ADVISORIES if "body" in c]
REGISTRATIONS = load(
    "registrations", {"group", "before", "request", "status", "code", "same_id_as", "same_token_as", "answer", "registered", "error"}
)
REG_REQUESTS = [c for c in REGISTRATIONS if "request" in c]
REG_ANSWERS = [c for c in REGISTRATIONS if "answer" in c]
SPLITS = load("worker_split", {"client", "client_repeat", "fnv1a64", "workers"})


def _field_of(fn: Any, data: bytes | str) -> str:
    with pytest.raises(FieldError) as e:
        got = fn(data)
        pytest.fail(f"decoded to {got!r}, want an error")
    assert e.value.field and e.value.allowed, "a FieldError names its field and what is allowed"
    return e.value.field


@pytest.mark.parametrize("case", REPORTS, ids=ids(REPORTS))
def test_report_vector(case: dict[str, Any]) -> None:
    assert ("error" in case) != ("report" in case), "a case has exactly one of error and report"
    data = build_body(case)
    if "error" in case:
        assert _field_of(decode_report, data) == case["error"]
        return
    r = decode_report(data)
    want = case["report"]
    assert r.load == want["load"]
    assert r.metrics == want.get("metrics", {})
    if "clients_count" in want:
        assert len(r.clients) == want["clients_count"]
    else:
        assert [{"id": c.id, "rate": c.rate} for c in r.clients] == want.get("clients", [])
    w = None if r.worker is None else {"index": r.worker.index, "count": r.worker.count}
    assert w == want.get("worker")
    # What a Python monitor sends decodes to the same report.
    again = decode_report(httpx.Request("POST", "http://x", json=r.to_wire()).read())
    assert again == r


@pytest.mark.parametrize("case", ADVISORY_DECODES, ids=ids(ADVISORY_DECODES))
def test_advisory_decode_vector(case: dict[str, Any]) -> None:
    assert ("error" in case) != ("advisory" in case), "a decode case has exactly one of error and advisory"
    if "error" in case:
        assert _field_of(decode_advisory, case["body"]) == case["error"]
        return
    a = decode_advisory(case["body"])
    want = case["advisory"]
    assert a.advisory == want["advisory"]
    assert a.shed == want["shed"]
    assert a.term == int(want["term"]) and a.epoch == int(want["epoch"])
    assert list(a.clients) == want["clients"]
    assert math.isclose(a.report_interval * 1000, want["report_interval_ms"], abs_tol=1e-9)


def test_advisory_behaviour_cases_are_well_formed() -> None:
    """The behaviour cases are the monitor's to run; here only their shape
    is checked, so that a broken case fails in every suite."""
    behaviour = [c for c in ADVISORIES if "steps" in c]
    assert behaviour
    for c in behaviour:
        for s in c["steps"]:
            assert ("apply" in s) != ("call" in s), c["name"]
            if "apply" in s:
                decode_advisory(httpx.Request("POST", "http://x", json=s["apply"]).read())
            else:
                assert s["expect"] in ("run", "rebind"), c["name"]


@pytest.mark.parametrize("case", REG_ANSWERS, ids=ids(REG_ANSWERS))
def test_registration_answer_vector(case: dict[str, Any]) -> None:
    assert ("error" in case) != ("registered" in case)
    if "error" in case:
        assert _field_of(decode_registration_answer, case["answer"]) == case["error"]
        return
    r = decode_registration_answer(case["answer"])
    want = case["registered"]
    assert (r.id, r.token, r.front_door, r.report_url) == (
        want["id"],
        want["token"],
        want["front_door"],
        want["report_url"],
    )
    assert math.isclose(r.report_interval * 1000, want["report_interval_ms"], abs_tol=1e-9)


def test_registration_request_vectors(balancer: Any) -> None:
    """Every request case against one real balancer, each in a fresh group."""
    assert REG_REQUESTS
    for n, case in enumerate(REG_REQUESTS):
        name = f"vec{n}"
        balancer.create_group(name, **case["group"])
        path = f"/v1/groups/{name}/replicas"
        headers = {"Content-Type": "application/json"}
        before: list[Any] = []
        for body in case.get("before", []):
            r = balancer.api.post(path, content=body.encode(), headers=headers)
            assert r.status_code in (200, 201), f"{case['name']}: before: {r.status_code} {r.text}"
            before.append(decode_registration_answer(r.content))
        r = balancer.api.post(path, content=case["request"].encode(), headers=headers)
        assert r.status_code == case["status"], f"{case['name']}: {r.status_code} {r.text}"
        if r.status_code >= 400:
            err = r.json()["error"]
            if "code" in case:
                assert err["code"] == case["code"], f"{case['name']}: {err}"
            if "error" in case:
                assert err.get("field") == case["error"], f"{case['name']}: {err}"
        else:
            reg = decode_registration_answer(r.content)
            if "same_id_as" in case:
                assert reg.id == before[case["same_id_as"]].id, case["name"]
            if "same_token_as" in case:
                assert reg.token == before[case["same_token_as"]].token, case["name"]


@pytest.mark.parametrize("case", SPLITS, ids=ids(SPLITS))
def test_worker_split_vector(case: dict[str, Any]) -> None:
    cid = case["client"] * case.get("client_repeat", 1)
    assert len(cid.encode("utf-8")) <= 128
    assert f"{client_hash(cid):016x}" == case["fnv1a64"]
    assert case["workers"]
    for count, worker in case["workers"].items():
        assert worker_of(cid, int(count)) == worker, f"count {count}"
