"""Every case of protocol/testdata/monitor_flows.json (a monitor's
conversations with the admin API, shared with the Go monitor's
monitor/vectors_flows_test.go; see protocol/testdata/README.md) against a
real fulcrum_client Monitor and real local HTTP servers: each party
answers its scripted responses in order (a refused party is a closed
port, a reset closes the connection with SO_LINGER 0 after reading the
request), the steps start the monitor (start, then wait_registered or
failed), report (report_now) and close it, and every party must have seen
exactly the requests it lists."""

from __future__ import annotations

import json
from typing import Any

import pytest
import vectors
from scripted import Party, Seen

from fulcrum_client._admin import APIError
from fulcrum_client.monitor import Monitor, MonitorError

CASE_KEYS = {"monitor", "parties", "steps"}
MONITOR_KEYS = {"admins", "token", "join_token", "worker", "register_attempts"}
PARTY_KEYS = {"refused", "responses", "requests"}
RESPONSE_KEYS = {"status", "headers", "body", "reset"}
REQUEST_KEYS = {"method", "target", "headers", "absent", "json", "same_body_as"}
STEP_KEYS = {"do", "expect", "status", "advisory", "interval_ms", "doc"}
ADVISORY_KEYS = {"advisory", "term", "epoch"}
GROUP, ADDRESS, FRONT = "g", "http://192.0.2.10:9001", "http://192.0.2.1:8000"


def load_cases() -> list[dict[str, Any]]:
    cases = vectors.load("monitor_flows", CASE_KEYS)
    for c in cases:
        n = c["name"]
        vectors.strict(c["monitor"], MONITOR_KEYS, f"{n}.monitor")
        for pname, p in c["parties"].items():
            vectors.strict(p, PARTY_KEYS, f"{n}.parties.{pname}")
            for j, r in enumerate(p.get("responses", [])):
                vectors.strict(r, RESPONSE_KEYS, f"{n}.parties.{pname}.responses[{j}]")
            for j, r in enumerate(p.get("requests", [])):
                vectors.strict(r, REQUEST_KEYS, f"{n}.parties.{pname}.requests[{j}]")
        for j, s in enumerate(c["steps"]):
            vectors.strict(s, STEP_KEYS, f"{n}.steps[{j}]")
            if "advisory" in s:
                vectors.strict(s["advisory"], ADVISORY_KEYS, f"{n}.steps[{j}].advisory")
    return cases


CASES = load_cases()


def check_requests(parties: dict[str, Party]) -> list[str]:
    errs: list[str] = []
    for p in parties.values():

        def check_body(where: str, got: Seen, want: dict[str, Any]) -> list[str]:
            errs: list[str] = []
            if "json" in want:
                try:
                    body = json.loads(got.body)
                except ValueError as e:
                    errs.append(f"{where}: body {got.body!r}: {e}")
                    body = {}
                for k, v in want["json"].items():
                    if not isinstance(body, dict) or body.get(k) != v:
                        errs.append(f"{where}: body member {k} = {body.get(k) if isinstance(body, dict) else None!r}, want {v!r}")
            if "same_body_as" in want:
                ref = want["same_body_as"]
                other = parties[ref["party"]].requests()
                ob = other[ref["index"]].body if ref["index"] < len(other) else None
                if got.body != ob:
                    errs.append(f"{where}: body {got.body!r}, want the body of {ref['party']}'s request {ref['index']} ({ob!r})")
            return errs

        errs += p.check(lambda s: s, check_body)
    return errs


def make_monitor(spec: dict[str, Any], parties: dict[str, Party]) -> Monitor:
    admins = [parties[a].url for a in spec["admins"]]
    kw: dict[str, Any] = {"balancer": admins[0], "admins": admins[1:], "group": GROUP, "address": ADDRESS, "timeout": 5}
    if "token" in spec:
        kw.update(token=spec["token"], front_door=FRONT)
    if "join_token" in spec:
        kw["join_token"] = spec["join_token"]
    if "worker" in spec:
        kw["worker"] = (spec["worker"]["index"], spec["worker"]["count"])
    else:
        kw["workers"] = 1  # a single process, whatever WEB_CONCURRENCY says
    if "register_attempts" in spec:
        kw["register_attempts"] = spec["register_attempts"]
    return Monitor(**kw)


def run_step(mon: Monitor, i: int, step: dict[str, Any]) -> None:
    where = f"step {i} ({step['do']} {step.get('doc', '')})"
    do = step["do"]
    if do == "start":
        mon.start()
        try:
            mon.wait_registered(timeout=10)
            got = "registered"
        except MonitorError:
            got = "gave_up"
        assert got == step["expect"], f"{where}: {got}, want {step['expect']}"
    elif do == "report":
        err: Exception | None = None
        try:
            mon.report_now()
        except Exception as e:  # noqa: BLE001 - the outcome checked
            err = e
        got = "ok" if err is None else "error"
        assert got == step["expect"], f"{where}: {got} ({err}), want {step['expect']}"
        if "status" in step:
            assert isinstance(err, APIError) and err.status == step["status"], f"{where}: error {err!r}, want the admin's answer {step['status']}"
    elif do == "close":
        mon.close(timeout=10)
    else:
        raise AssertionError(f"{where}: unknown step")
    want = step.get("advisory")
    if want is not None:
        adv = mon.advisory
        got_adv = {"advisory": adv.advisory, "term": str(adv.term), "epoch": str(adv.epoch)}
        assert all(got_adv[k] == v for k, v in want.items()), f"{where}: advisory {got_adv}, want {want}"
    if "interval_ms" in step:
        assert mon.interval * 1000 == pytest.approx(step["interval_ms"]), f"{where}: interval {mon.interval * 1000}ms, want {step['interval_ms']}ms"


@pytest.mark.parametrize("case", CASES, ids=vectors.ids(CASES))
def test_vectors_monitor_flows(case: dict[str, Any]) -> None:
    parties = {name: Party(name, spec, subst_body=True) for name, spec in case["parties"].items()}
    for p in parties.values():
        p.listen()

    def subst(s: str) -> str:
        for name, p in parties.items():
            s = s.replace("{" + name + "}", p.url)
        return s

    for p in parties.values():
        p.serve(subst)
    mon = make_monitor(case["monitor"], parties)
    try:
        for i, step in enumerate(case["steps"]):
            run_step(mon, i, step)
        errs = check_requests(parties)
        assert not errs, "\n".join(errs)
    finally:
        mon.close(timeout=2)
        for p in parties.values():
            p.kill()
