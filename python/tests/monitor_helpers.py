"""Helpers of the monitor tests: free ports, a replica registered and
reported by hand (a second replica for the analyzer to move clients to),
bound calls, and the advisory check shared by the ASGI and WSGI tests."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

import httpx

from conftest import Balancer, wait_for
from fulcrum_client.monitor import Monitor


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def replica(b: Balancer, group: str, address: str) -> dict[str, Any] | None:
    for r in b.group(group).get("replicas", []):
        if r["address"] == address:
            return r  # type: ignore[no-any-return]
    return None


def reported(b: Balancer, group: str, address: str) -> dict[str, Any] | None:
    """The replica's status once it shows a report's rps and latency."""
    r = replica(b, group, address)
    if r and r.get("source") == "report" and (r.get("rps") or 0) > 0 and r.get("latency_p50_ms") is not None:
        return r
    return None


class IdleReplica:
    """A replica registered through the API that reports load 0 every
    interval from a thread until stopped: somewhere for the analyzer to
    move clients to. Nothing listens at its address; the tests' clients
    call the monitored replica directly."""

    def __init__(self, b: Balancer, group: str, interval: float) -> None:
        r = b.api.post(f"/v1/groups/{group}/replicas", json={"address": f"http://127.0.0.1:{free_port()}"})
        r.raise_for_status()
        self.id = r.json()["id"]
        self._token = r.json()["token"]
        self._api = b.api
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._api.post("/v1/report", json={"load": 0, "metrics": {"rps": 0}},
                           headers={"Authorization": f"Bearer {self._token}"}).raise_for_status()
            self._stop.wait(self._interval)  # the report interval, not a synchronisation

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def bound_call(http: httpx.Client, base: str, group: str, rid: str, client: str, path: str = "/work?x=1") -> httpx.Response:
    return http.get(base + path, headers={"Fulcrum-Binding": f"{group}/{rid}", "Fulcrum-Client": client})


def check_one_rebind_per_advisory(
    b: Balancer, group: str, base: str, mon: Monitor, rid: str, pace: Callable[[], object]
) -> None:
    """Drives bound calls of two clients (c-big twice as often as c-small)
    at the monitored replica while an idle replica reports load 0, until an
    advisory names one of them; then checks, per advisory (term, epoch) the
    monitor obeyed before and after each call, that every named client got
    exactly one 307 with Fulcrum-Rebind: 1 and Location the front door plus
    the call's path and query, and that later calls in it ran."""
    front = b.group(group)["advertise"].rstrip("/")
    idle = IdleReplica(b, group, 0.05)
    results: dict[tuple[int, int, str], list[int]] = {}
    named: dict[tuple[int, int], tuple[str, ...]] = {}
    switched: set[tuple[int, int, str]] = set()
    try:
        with httpx.Client(timeout=5) as http:

            def settled() -> bool:
                for (term, epoch, cid), codes in results.items():
                    if cid in named.get((term, epoch), ()) and 307 in codes and len(codes) >= 4:
                        return True
                pace()
                for cid in ("c-big", "c-big", "c-small"):
                    before = mon.advisory
                    r = bound_call(http, base, group, rid, cid)
                    after = mon.advisory
                    if r.status_code == 307:
                        assert r.headers["Fulcrum-Rebind"] == "1"
                        assert r.headers["Location"] == front + "/work?x=1"
                        assert r.headers["Content-Length"] == "0"
                    else:
                        assert r.status_code == 200, r.text
                    if before == after and before.advisory == "high":
                        named[(after.term, after.epoch)] = after.clients
                        results.setdefault((after.term, after.epoch, cid), []).append(r.status_code)
                    elif r.status_code == 307 and after.advisory == "high":
                        # The advisory changed during the call: the 307 may
                        # be the new advisory's one send-back.
                        switched.add((after.term, after.epoch, cid))
                return False

            wait_for("an advisory naming a client, and calls after its 307", settled, timeout=20, interval=0)
    finally:
        idle.stop()
    for (term, epoch, cid), codes in results.items():
        what = f"client {cid} in advisory (term {term}, epoch {epoch}) naming {named[(term, epoch)]}: {codes}"
        if cid in named[(term, epoch)]:
            if (term, epoch, cid) in switched:
                assert 307 not in codes, "sent back again: " + what
            else:
                assert codes[0] == 307 and 307 not in codes[1:], "not sent back exactly once: " + what
        else:
            assert 307 not in codes, "not named but sent back: " + what
