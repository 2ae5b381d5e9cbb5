"""Every case of protocol/testdata/client.json (the binding protocol's
scripts, shared with the Go client's client/vectors_test.go; see
protocol/testdata/README.md) against BindingTransport,
AsyncBindingTransport and FulcrumAdapter, with real local HTTP servers:
each party answers its scripted responses in order, a refused party is a
closed port, a reset closes the connection with SO_LINGER 0 after reading
the request, close_without_response closes it (FIN) after reading the
request, keep_alive leaves it open for the next request. Every call must end as the case says, and every party must
have seen exactly the requests it lists."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import requests
import vectors
from scripted import Party, Seen

from fulcrum_client import AsyncBindingTransport, BindingTransport, FulcrumAdapter

# The members each object of a case may have; any other fails the case.
CASE_KEYS = {"name", "doc", "options", "parties", "calls"}
OPTION_KEYS = {"client_id", "front_doors", "max_hops", "max_buffered_body"}
PARTY_KEYS = {"refused", "responses", "requests"}
RESPONSE_KEYS = {"status", "headers", "body", "reset", "close_without_response", "keep_alive"}
REQUEST_KEYS = {"method", "target", "headers", "absent", "body"}
CALL_KEYS = {"doc", "method", "url", "headers", "body", "body_stream", "expect", "binding_after"}
EXPECT_KEYS = {"status", "body", "headers", "error"}
BINDING_KEYS = {"group", "replica", "url"}


def load_cases() -> list[dict[str, Any]]:
    """client.json's cases (the shared loader checks the file and each
    case's members), each nested object checked for unknown members too."""
    cases = vectors.load("client", CASE_KEYS)
    for i, c in enumerate(cases):
        vectors.strict(c.get("options", {}), OPTION_KEYS, f"cases[{i}].options")
        for pname, p in c["parties"].items():
            vectors.strict(p, PARTY_KEYS, f"cases[{i}].parties.{pname}")
            for j, r in enumerate(p.get("responses", [])):
                vectors.strict(r, RESPONSE_KEYS, f"cases[{i}].parties.{pname}.responses[{j}]")
            for j, r in enumerate(p.get("requests", [])):
                vectors.strict(r, REQUEST_KEYS, f"cases[{i}].parties.{pname}.requests[{j}]")
        for j, call in enumerate(c["calls"]):
            vectors.strict(call, CALL_KEYS, f"cases[{i}].calls[{j}]")
            vectors.strict(call["expect"], EXPECT_KEYS, f"cases[{i}].calls[{j}].expect")
            if call.get("binding_after") is not None:
                vectors.strict(call["binding_after"], BINDING_KEYS, f"cases[{i}].calls[{j}].binding_after")
    return cases


CASES = load_cases()


@dataclass
class Outcome:
    """How a call ended, as the runner compares it."""

    status: int = 0
    body: str = ""
    headers: dict[str, list[str]] = field(default_factory=dict)
    error: str = ""  # "transport" or "too_many_hops"
    detail: str = ""


def stream(data: bytes) -> Iterator[bytes]:
    yield data[: len(data) // 2]
    yield data[len(data) // 2 :]


async def astream(data: bytes) -> AsyncIterator[bytes]:
    for c in stream(data):
        yield c


def httpx_outcome(resp: httpx.Response) -> Outcome:
    return Outcome(
        status=resp.status_code,
        body=resp.text,
        headers={k.lower(): resp.headers.get_list(k) for k in resp.headers.keys()},
    )


class Case:
    """One case, run on one client kind."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        opts = spec.get("options", {})
        self.client_id = opts.get("client_id") or "vectors-client"
        self.parties = {name: Party(name, p) for name, p in sorted(spec["parties"].items())}
        for p in self.parties.values():  # every party listens first: scripts name each other's URLs
            p.listen()
        for p in self.parties.values():
            p.serve(self.subst)
        self.options: dict[str, Any] = {"client_id": self.client_id}
        doors = []
        for d in opts.get("front_doors", []):
            assert d in self.parties, f"options.front_doors: no party {d!r}"
            doors.append(self.parties[d].url)
        self.options["front_doors"] = doors
        if opts.get("max_hops"):
            self.options["max_hops"] = opts["max_hops"]
        if opts.get("max_buffered_body"):
            self.options["max_buffered_body"] = opts["max_buffered_body"]

    def subst(self, s: str) -> str:
        s = s.replace("{client_id}", self.client_id)
        for name, p in self.parties.items():
            s = s.replace("{" + name + "}", p.url)
        return s

    def close(self) -> None:
        for p in self.parties.values():
            p.kill()

    def request_args(self, call: dict[str, Any]) -> tuple[str, str, dict[str, str], bytes | None]:
        body = call["body"].encode() if call.get("body") is not None else None
        headers = {k: self.subst(v) for k, v in call.get("headers", {}).items()}
        return call["method"], self.subst(call["url"]), headers, body

    def check_call(self, i: int, call: dict[str, Any], got: Outcome, binding: Any) -> list[str]:
        want = call["expect"]
        where = f"call {i} ({call['method']} {call['url']})"
        errs: list[str] = []
        if want.get("error"):
            if got.error != want["error"]:
                errs.append(f"{where}: got status {got.status} / error {got.error or '-'} ({got.detail}), want error {want['error']}")
        elif got.error:
            errs.append(f"{where}: error {got.error} ({got.detail}), want status {want['status']}")
        else:
            if got.status != want["status"]:
                errs.append(f"{where}: status {got.status} ({got.body!r}), want {want['status']}")
            if "body" in want and got.body != want["body"]:
                errs.append(f"{where}: body {got.body!r}, want {want['body']!r}")
            for k, v in want.get("headers", {}).items():
                g = got.headers.get(k.lower(), [])
                if g != [self.subst(v)]:
                    errs.append(f"{where}: answer header {k} = {g!r}, want {self.subst(v)!r}")
        if "binding_after" in call:
            wb = call["binding_after"]
            if wb is None:
                if binding is not None:
                    errs.append(f"{where}: bound to {binding} after the call, want no binding")
            else:
                have = None if binding is None else (binding.group, binding.replica, binding.url)
                if have != (wb["group"], wb["replica"], self.subst(wb["url"])):
                    errs.append(f"{where}: binding after the call {have}, want {wb}")
        return errs

    def front_door_of(self, url: str) -> str:
        u = httpx.URL(url)
        return f"{u.scheme}://{u.netloc.decode()}"

    # --- the three clients ---------------------------------------------

    def run_sync(self) -> list[str]:
        errs: list[str] = []
        transport = BindingTransport(**self.options)
        with httpx.Client(transport=transport, follow_redirects=False, timeout=10) as client:
            for i, call in enumerate(self.spec["calls"]):
                method, url, headers, body = self.request_args(call)
                content: Any = stream(body) if body is not None and call.get("body_stream") else body
                try:
                    got = httpx_outcome(client.request(method, url, headers=headers, content=content))
                except httpx.TooManyRedirects as e:
                    got = Outcome(error="too_many_hops", detail=str(e))
                except httpx.TransportError as e:
                    got = Outcome(error="transport", detail=repr(e))
                errs += self.check_call(i, call, got, transport.binding(self.front_door_of(url)))
        return errs

    def run_async(self) -> list[str]:
        async def main() -> list[str]:
            errs: list[str] = []
            transport = AsyncBindingTransport(**self.options)
            async with httpx.AsyncClient(transport=transport, follow_redirects=False, timeout=10) as client:
                for i, call in enumerate(self.spec["calls"]):
                    method, url, headers, body = self.request_args(call)
                    content: Any = astream(body) if body is not None and call.get("body_stream") else body
                    try:
                        got = httpx_outcome(await client.request(method, url, headers=headers, content=content))
                    except httpx.TooManyRedirects as e:
                        got = Outcome(error="too_many_hops", detail=str(e))
                    except httpx.TransportError as e:
                        got = Outcome(error="transport", detail=repr(e))
                    errs += self.check_call(i, call, got, transport.binding(self.front_door_of(url)))
            return errs

        return asyncio.run(main())

    def run_requests(self) -> list[str]:
        errs: list[str] = []
        adapter = FulcrumAdapter(**self.options)
        with requests.Session() as session:
            session.mount("http://", adapter)
            for i, call in enumerate(self.spec["calls"]):
                method, url, headers, body = self.request_args(call)
                data: Any = stream(body) if body is not None and call.get("body_stream") else body
                try:
                    r = session.request(method, url, headers=headers, data=data, allow_redirects=False, timeout=10)
                    raw = r.raw.headers if hasattr(r.raw, "headers") else None
                    hdrs = {k.lower(): raw.getlist(k) for k in raw.keys()} if raw is not None else {}
                    got = Outcome(status=r.status_code, body=r.text, headers=hdrs)
                except requests.TooManyRedirects as e:
                    got = Outcome(error="too_many_hops", detail=str(e))
                except requests.RequestException as e:
                    got = Outcome(error="transport", detail=repr(e))
                errs += self.check_call(i, call, got, adapter.binding(self.front_door_of(url)))
        return errs


def check_body(where: str, got: Seen, want: dict[str, Any]) -> list[str]:
    if "body" in want and got.body.decode() != want["body"]:
        return [f"{where}: body {got.body.decode()!r}, want {want['body']!r}"]
    return []


@pytest.mark.parametrize("client", ["sync", "async", "requests"])
@pytest.mark.parametrize("spec", CASES, ids=vectors.ids(CASES))
def test_vectors_client(spec: dict[str, Any], client: str) -> None:
    case = Case(spec)
    try:
        errs = getattr(case, "run_" + client)()
    finally:
        case.close()
    for p in case.parties.values():
        errs += p.check(case.subst, check_body)
    assert not errs, f"{spec['name']} ({spec.get('doc', '')}):\n  " + "\n  ".join(errs)
