"""The Python clients against the real fulcrum binary: a `fulcrum serve`
balancer (the conftest fixture) with real replicas (`fulcrum backend prime`,
the Go test service, with its Go monitor where it registers itself)."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from conftest import Balancer, wait_for

from fulcrum_client import AsyncBindingTransport, BindingTransport, FulcrumAdapter


class Backend:
    """A `fulcrum backend prime` process on a free loopback port; with
    admin and group it registers itself (push monitor) and obeys
    advisories."""

    def __init__(self, binary: str, admin: str = "", group: str = "") -> None:
        args = [binary, "backend", "prime", "--listen", "127.0.0.1:0"]
        if admin:
            args += ["--register", admin, "--group", group]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        found = threading.Event()
        self.url = ""

        def read() -> None:
            assert self.proc.stdout is not None
            line = self.proc.stdout.readline()
            if line.startswith("listening on "):
                self.url = line.removeprefix("listening on ").strip()
            found.set()
            for _ in self.proc.stdout:  # keep the pipe drained
                pass

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(15) or not self.url:
            self.kill()
            raise RuntimeError(f"fulcrum backend did not say where it listens: {args}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def backends(fulcrum_bin: str) -> Iterator[Any]:
    started: list[Backend] = []

    def start(admin: str = "", group: str = "") -> Backend:
        b = Backend(fulcrum_bin, admin, group)
        started.append(b)
        return b

    yield start
    for b in started:
        b.kill()


def active_replicas(bal: Balancer, group: str, n: int) -> list[dict[str, Any]]:
    """Waits until the group has n active replicas; returns them."""

    def ready() -> list[dict[str, Any]] | None:
        rs = [r for r in bal.group(group).get("replicas") or [] if r.get("state") == "active"]
        return rs if len(rs) == n else None

    return wait_for(f"{n} active replicas in {group}", ready)  # type: ignore[no-any-return]


def monitored_group(balancer: Balancer, backends: Any, n: int = 2) -> tuple[str, dict[str, str]]:
    """An on-demand group with n self-registered backends reporting every
    200 ms; returns its front door URL and replica id → backend URL."""
    g = balancer.create_group("g", binding="on-demand", strategy="round-robin", report_interval="200ms")
    for _ in range(n):
        backends(balancer.admin, "g")
    rs = active_replicas(balancer, "g", n)
    return g["advertise"], {r["id"]: r["address"] for r in rs}


def test_bind_and_call_straight(balancer: Balancer, backends: Any) -> None:
    fd, replicas = monitored_group(balancer, backends)
    t = BindingTransport()
    with httpx.Client(transport=t, timeout=10) as c:
        r = c.get(fd + "/prime/7")
        assert r.status_code == 200 and r.json()["prime"] is True, r.text
        b = t.binding(fd)
        assert b is not None and b.group == "g" and replicas[b.replica] == b.url
        assert r.json()["served_by"] == b.replica
        for n in range(8, 20):
            # Round-robin at the front door would alternate: the same
            # replica every time shows the calls go straight to it.
            assert c.get(f"{fd}/prime/{n}").json()["served_by"] == b.replica
            assert t.binding(fd) is b, "later calls keep the binding"
        assert c.post(fd + "/echo", content=b"hello").text == "hello"


def test_rebind_on_a_drain_advisory(balancer: Balancer, backends: Any) -> None:
    fd, replicas = monitored_group(balancer, backends)
    t = BindingTransport()
    failed: list[str] = []
    with httpx.Client(transport=t, timeout=10) as c:
        assert c.get(fd + "/prime/7").status_code == 200
        first = t.binding(fd)
        assert first is not None
        balancer.api.post(f"/v1/groups/g/replicas/{first.replica}/drain").raise_for_status()

        def moved() -> bool:
            r = c.post(fd + "/echo", content=b"x")  # a body, replayed through the rebind
            if r.status_code != 200 or r.text != "x":
                failed.append(f"{r.status_code} {r.text}")
            b = t.binding(fd)
            return b is not None and b.replica != first.replica

        wait_for("the drained replica's monitor to send the client back", moved)
    assert failed == [], "no call fails while the client is moved"
    b = t.binding(fd)
    assert b is not None and b.replica in replicas and b.replica != first.replica


def test_failover_when_the_bound_replica_is_killed(balancer: Balancer, backends: Any) -> None:
    balancer.create_group("g", binding="on-demand", strategy="round-robin", report_interval="200ms")
    procs = [backends(balancer.admin, "g") for _ in range(2)]
    active_replicas(balancer, "g", 2)
    fd = balancer.group("g")["advertise"]
    by_url = {p.url: p for p in procs}

    async def main() -> None:
        t = AsyncBindingTransport()
        async with httpx.AsyncClient(transport=t, timeout=10) as c:
            assert (await c.get(fd + "/prime/7")).status_code == 200
            first = t.binding(fd)
            assert first is not None
            by_url[first.url].kill()  # kill -9: connections refused from now on
            for n in range(20):  # every call succeeds: refused calls did not run, so they go elsewhere
                r = await c.post(fd + "/echo", content=f"call {n}".encode())
                assert (r.status_code, r.text) == (200, f"call {n}")
            b = t.binding(fd)
            assert b is not None and b.replica != first.replica

    asyncio.run(main())


def test_several_front_doors(fulcrum_bin: str, tmp_path: Path, backends: Any) -> None:
    # Two balancers serve the same group over the same two replicas (no
    # monitors: round-robin over registered addresses).
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = Balancer(fulcrum_bin, tmp_path / "a"), Balancer(fulcrum_bin, tmp_path / "b")
    try:
        replicas = [backends(), backends()]
        doors = []
        for bal in (a, b):
            doors.append(bal.create_group("g", binding="on-demand", strategy="round-robin")["advertise"])
            for r in replicas:
                bal.api.post("/v1/groups/g/replicas", json={"address": r.url}).raise_for_status()
            active_replicas(bal, "g", 2)
        adapter = FulcrumAdapter(front_doors=doors)
        with requests.Session() as s:
            s.mount("http://", adapter)
            assert s.get(doors[0] + "/prime/7", timeout=10).status_code == 200
            bound = adapter.binding(doors[0])
            assert bound is not None and adapter.binding(doors[1]) is bound, "one binding for the group's front doors"
            adapter.unbind(doors[0])
            a.stop()  # the first front door is gone: connections refused
            r = s.post(doors[0] + "/echo", data=b"after", timeout=10)
            assert (r.status_code, r.text) == (200, "after"), "the call moved to the second front door"
            assert adapter.binding(doors[1]) is not None
    finally:
        a.stop()
        b.stop()
