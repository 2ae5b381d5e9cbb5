"""The binding protocol as the three clients (BindingTransport,
AsyncBindingTransport, FulcrumAdapter) follow it, against real local HTTP
servers (client_servers): the cases of the Go client's transport_test.go."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler

import httpx
import pytest
from client_callers import errors_of, make, net  # noqa: F401 - fixtures
from client_servers import GROUP, Net, Ran, Server, reply

from fulcrum_client import AsyncBindingTransport, BindingTransport, FulcrumAdapter


def test_binding_is_cached_and_headers_sent(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1 = net.replica("r1")
    fd = net.front_door(r1)
    c = make(client_id="client-7")
    for i in range(3):
        code, body, _ = c.do("GET", f"{fd.url}/prime/{i}?v=1")
        assert (code, body) == (200, "r1:"), f"call {i}"
    assert fd.hit_count() == 1, "the front door is asked once, then the binding is used"
    assert r1.ran() == [Ran(f"/prime/{i}?v=1", "", "g/r1", "client-7") for i in range(3)]
    assert fd.clients == ["client-7"]
    b = c.binding(fd.url)
    assert b is not None and (b.group, b.replica, b.url) == (GROUP, "r1", r1.server.url)
    c.transport.unbind(fd.url)
    assert c.binding(fd.url) is None


def test_random_client_id_is_stable() -> None:
    a, b = BindingTransport(), BindingTransport()
    assert a.client_id and a.client_id != b.client_id and len(a.client_id) <= 128
    assert a.client_id == a.client_id
    assert AsyncBindingTransport(client_id="x").client_id == "x"


@pytest.mark.parametrize("bad", ["", "a b", "x" * 129, "é"])
def test_invalid_client_id_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"client_id .*1 to 128 visible ASCII"):
        BindingTransport(client_id=bad)


@pytest.mark.parametrize(
    "doors, index",
    [(["http://a:1", "10.0.0.2:8000"], 1), (["ftp://a:1"], 0), (["http://a:1/api"], 0), (["http://a:1?q=1"], 0)],
)
def test_invalid_front_doors_are_refused(doors: list[str], index: int) -> None:
    for cls in (BindingTransport, AsyncBindingTransport, FulcrumAdapter):
        with pytest.raises(ValueError, match=re.escape(f"front_doors[{index}] '{doors[index]}'")):
            cls(front_doors=doors)
    with pytest.raises(ValueError, match="not one string"):
        BindingTransport(front_doors="http://a:1")


def test_replica_base_path_is_kept(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1 = net.replica("r1", "/api/v2")
    fd = net.front_door(r1)
    c = make()
    c.do("GET", fd.url + "/prime/7?x=a%2Fb")
    c.do("GET", fd.url + "/count/a%2Fb?y=1")
    assert [r.path for r in r1.ran()] == ["/api/v2/prime/7?x=a%2Fb", "/api/v2/count/a%2Fb?y=1"]
    assert c.binding(fd.url).url == r1.server.url + "/api/v2"


@pytest.mark.parametrize("streamed", [False, True], ids=["bytes", "buffered"])
def test_rebind_is_followed_with_the_body_replayed(net: Net, make, streamed: bool) -> None:  # type: ignore[no-untyped-def]
    r1, r2 = net.replica("r1"), net.replica("r2")
    fd = net.front_door(r1, r2)  # first r1, then r2
    c = make()
    c.do("POST", fd.url + "/echo", b"payload", streamed=streamed)
    r1.rebinds = 1
    code, body, _ = c.do("POST", fd.url + "/echo?n=2", b"payload", streamed=streamed)
    assert (code, body) == (200, "r2:payload")
    assert len(r1.ran()) == 1, "r1 ran only the first call"
    assert r2.ran() == [Ran("/echo?n=2", "payload", "g/r2", c.client_id)]
    assert fd.hit_count() == 2
    assert fd.hints == [" ", "1 g/r1"], "the front door is told which binding the client leaves"
    assert c.binding(fd.url).replica == "r2"


def test_redirects_leave_their_connections_reusable(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    # A redirect that is followed is drained and closed, so its keep-alive
    # connection serves the next attempt (Go: discard).
    r1 = net.replica("r1")
    fd = net.front_door(r1)
    c = make()
    for _ in range(5):
        r1.rebinds = 1
        assert c.do("POST", fd.url + "/echo", b"b")[:2] == (200, "r1:b")
    assert fd.hit_count() == 6 and len(r1.ran()) == 5
    assert (fd.server.accepted, r1.server.accepted) == (1, 1)


def test_dial_failure_rebinds_without_running_twice(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1, r2 = net.replica("r1"), net.replica("r2")
    fd = net.front_door(r1)
    c = make()
    c.do("POST", fd.url + "/echo", b"one")
    r1.server.kill()  # the replica dies; connections are refused
    fd.pick = lambda n: r2
    code, body, _ = c.do("POST", fd.url + "/echo", b"two", streamed=True)
    assert (code, body) == (200, "r2:two")
    assert (len(r1.ran()), len(r2.ran())) == (1, 1)
    assert c.binding(fd.url).replica == "r2"
    assert fd.hints == [" ", "unreachable g/r1"], "the client names the replica it could not reach"


def test_failure_after_sending_is_not_retried(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1, r2 = net.replica("r1"), net.replica("r2")
    fd = net.front_door(r1)
    c = make()
    c.do("GET", fd.url + "/x")
    r1.crash = True  # runs the call, then drops the connection
    fd.pick = lambda n: r2
    with pytest.raises(errors_of(c)):
        c.do("POST", fd.url + "/x", b"once")
    assert (len(r1.ran()), len(r2.ran()), fd.hit_count()) == (2, 0, 1), "no retry"
    assert c.binding(fd.url) is None, "binding kept after a connection failure"
    assert c.do("GET", fd.url + "/x")[:2] == (200, "r2:")


def test_replica_503_drops_the_binding(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1, r2 = net.replica("r1"), net.replica("r2")
    fd = net.front_door(r1, r2)
    c = make()
    c.do("GET", fd.url + "/x")
    r1.unavailable = 1
    assert c.do("GET", fd.url + "/x")[0] == 503, "the replica's 503 is returned (it may have run)"
    assert c.binding(fd.url) is None
    assert c.do("GET", fd.url + "/x")[:2] == (200, "r2:")
    assert len(r1.ran()) == 2


def test_read_timeout_keeps_the_binding(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    # The caller's own time bound ran out (Go: the context is done): the
    # error is raised, nothing is decided from it, the binding stays.
    release = threading.Event()
    ran: list[str] = []

    def slow(h: BaseHTTPRequestHandler) -> None:
        ran.append(h.path)
        if h.path == "/slow":
            release.wait(10)
        reply(h, 200, b"ok")

    r1 = net.server(slow)
    fd = net.server(lambda h: reply(h, 307, headers={"Location": r1.url + h.path, "Fulcrum-Group": GROUP, "Fulcrum-Replica": "r1"}))
    c = make()
    assert c.do("GET", fd.url + "/x")[:2] == (200, "ok")
    try:
        with pytest.raises(errors_of(c)):
            c.do("GET", fd.url + "/slow", timeout=0.3)
    finally:
        release.set()
    assert c.binding(fd.url) is not None and c.binding(fd.url).replica == "r1"
    assert ran == ["/x", "/slow"], "not sent again"


def test_front_door_503_is_retried_once_from_a_known_front_door(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1 = net.replica("r1")
    fd = net.front_door(r1)
    c = make()
    c.do("GET", fd.url + "/x")
    r1.rebinds, fd.unavailable = 1, 1
    assert c.do("POST", fd.url + "/x", b"b")[:2] == (200, "r1:b")
    assert fd.hit_count() == 3
    r1.rebinds, fd.unavailable = 1, 2
    assert c.do("GET", fd.url + "/x")[0] == 503, "503 when the retry is refused too"
    assert len(r1.ran()) == 2


def test_front_door_503_on_first_contact_is_not_retried(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1 = net.replica("r1")
    fd = net.front_door(r1)
    fd.unavailable = 1
    c = make()
    code, body, _ = c.do("GET", fd.url + "/x")
    assert code == 503 and "no_replica" in body
    assert fd.hit_count() == 1


def test_proxied_replica_503_is_not_retried(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    # The group was switched to per-request: the front door now passes on
    # a replica's 503 (no Fulcrum-Group), which may have run the call.
    r1 = net.replica("r1")
    state = {"hits": 0, "proxied": False}

    def door(h: BaseHTTPRequestHandler) -> None:
        state["hits"] += 1
        if state["proxied"]:
            reply(h, 503)
            return
        reply(h, 307, headers={"Location": r1.base + h.path, "Fulcrum-Group": GROUP, "Fulcrum-Replica": "r1"})

    srv = net.server(door)
    r1.front_door = srv.url
    c = make()
    c.do("GET", srv.url + "/x")
    r1.rebinds = 1
    state["proxied"] = True
    assert c.do("GET", srv.url + "/x")[0] == 503
    assert state["hits"] == 2, "the 503 is not retried"


def test_hops_are_bounded(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1 = net.replica("r1")
    fd = net.front_door(r1)
    r1.rebinds = 1 << 30  # sends every bound call back
    c = make(max_hops=3)
    with pytest.raises(errors_of(c), match="too many redirects and retries: 3 for GET"):
        c.do("GET", fd.url + "/x")
    assert r1.ran() == []
    assert fd.hit_count() == 2, "front door, replica, front door, replica: 4 attempts"


def test_body_too_large_to_buffer_returns_the_redirect(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1 = net.replica("r1")
    fd = net.front_door(r1)
    c = make(max_buffered_body=8)
    big = b"x" * 100
    code, _, headers = c.do("POST", fd.url + "/echo", big, streamed=True)
    assert code == 307, "the front door's 307 is returned: the body cannot follow it"
    assert headers["fulcrum-replica" if c.name != "requests" else "Fulcrum-Replica"] == "r1"
    assert c.binding(fd.url).replica == "r1", "the binding is kept for later calls"
    assert r1.ran() == []
    # Bound now, a big body goes straight to the replica.
    assert c.do("POST", fd.url + "/echo", big, streamed=True)[:2] == (200, "r1:" + big.decode())
    # A rebind cannot be followed either: returned, binding dropped.
    r1.rebinds = 1
    code, _, headers = c.do("POST", fd.url + "/echo", big, streamed=True)
    assert code == 307 and c.binding(fd.url) is None
    # Bytes are always replayed, whatever the limit.
    assert c.do("POST", fd.url + "/echo", big)[:2] == (200, "r1:" + big.decode())


def test_other_redirects_are_left_to_the_caller(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    srv = net.server(lambda h: reply(h, 307, headers={"Location": "/elsewhere"}))
    c = make()
    code, _, headers = c.do("GET", srv.url + "/x")
    assert code == 307
    assert {k.lower(): v for k, v in headers.items()}["location"] == "/elsewhere"


def test_caller_headers_are_kept(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1 = net.replica("r1")
    fd = net.front_door(r1)
    c = make()
    c.do("GET", fd.url + "/x", headers={"Authorization": "Bearer app", "Fulcrum-Binding": "stale/r9"})
    got = r1.headers[0]
    assert got["Authorization"] == "Bearer app"
    assert got["Fulcrum-Binding"] == "g/r1", "a stale binding set by the caller is replaced"
    assert got["Host"] == r1.server.url.removeprefix("http://"), "Host follows the replica's URL"
    assert "Fulcrum-Binding" not in fd.headers[0], "the caller's stale binding does not reach the front door"


def test_front_doors_move_on_with_the_host_of_the_next(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1 = net.replica("r1")
    dead = net.front_door(r1)
    fd = net.front_door(r1)
    dead.server.kill()  # refused
    c = make(front_doors=[dead.url, fd.url])
    assert c.do("POST", dead.url + "/echo?x=1", b"b", streamed=True)[:2] == (200, "r1:b")
    assert fd.headers[0]["Host"] == fd.url.removeprefix("http://"), "Host follows the front door the call moved to"
    assert r1.ran() == [Ran("/echo?x=1", "b", "g/r1", c.client_id)]
    assert c.binding(dead.url) is c.binding(fd.url) is not None, "one binding for the group's front doors"


def test_front_doors_move_on_after_an_own_503_and_stay(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1 = net.replica("r1")
    a, b = net.front_door(r1), net.front_door(r1)
    a.unavailable = 1  # its own 503: fulcrum's JSON error naming the group
    c = make(front_doors=[a.url, b.url])
    assert c.do("POST", a.url + "/echo", b"b")[:2] == (200, "r1:b")
    assert (a.hit_count(), b.hit_count(), len(r1.ran())) == (1, 1, 1)
    # The front door that answered is tried first from now on.
    c.transport.unbind(a.url)
    assert c.do("GET", a.url + "/x")[:2] == (200, "r1:")
    assert (a.hit_count(), b.hit_count()) == (1, 2)


def test_identity_goes_to_front_doors_only(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    r1 = net.replica("r1")
    fd = net.front_door(r1)
    c = make(client_id="me")
    c.do("GET", fd.url + "/a")
    r1.rebinds = 1
    c.do("GET", fd.url + "/b")
    c.do("GET", fd.url + "/c", headers={"Idempotency-Key": "k1"})
    c.transport.unbind(fd.url)
    c.do("GET", fd.url + "/d", headers={"Fulcrum-Session": "mine", "Fulcrum-Sequence": "7"})
    c.transport.unbind(fd.url)
    c.do("GET", fd.url + "/e", headers={"Idempotency-Key": "k2"})
    seqs = [h["Fulcrum-Sequence"] for h in fd.headers[:2]]
    assert [h["Fulcrum-Session"] for h in fd.headers[:2]] == ["me", "me"]
    assert len(set(seqs)) == 2 and all(int(s) > 0 for s in seqs), "a fresh sequence per call"
    assert (fd.headers[2]["Fulcrum-Session"], fd.headers[2]["Fulcrum-Sequence"]) == ("mine", "7"), "the caller's own are kept"
    assert "Fulcrum-Session" not in fd.headers[3] and "Fulcrum-Sequence" not in fd.headers[3], "an Idempotency-Key names the call alone"
    for h in r1.headers:
        if h.get("Fulcrum-Binding") == "g/r1" and "Fulcrum-Session" in h:
            assert h["Fulcrum-Session"] == "mine", "bound calls carry no identity of the transport's"


def test_concurrent_calls_run_exactly_once(net: Net, make) -> None:  # type: ignore[no-untyped-def]
    replicas = [net.replica(f"r{i}") for i in range(3)]
    sent_back: set[str] = set()
    for r in replicas:
        r.rebind_once = sent_back
    fd = net.front_door(*replicas)
    c = make()
    workers, per_worker = 8, 15
    failures: list[str] = []

    def payload(w: int, i: int) -> tuple[str, str]:
        p = f"w{w}-{i}"
        return p, fd.url + "/echo" + (f"?rebind={p}" if i % 5 == 0 else "")

    if c.name == "async":

        async def worker(w: int) -> None:
            for i in range(per_worker):
                p, url = payload(w, i)
                content = p.encode()
                r = await c.client.post(url, content=content)
                if r.status_code != 200 or not r.text.endswith(":" + p):
                    failures.append(f"{p}: {r.status_code} {r.text}")

        async def main() -> None:
            await asyncio.gather(*(worker(w) for w in range(workers)))

        c.run(main())
    else:

        def run(w: int) -> None:
            for i in range(per_worker):
                p, url = payload(w, i)
                try:
                    code, body, _ = c.do("POST", url, p.encode(), streamed=i % 2 == 1)
                except Exception as e:  # noqa: BLE001 - recorded and asserted below
                    failures.append(f"{p}: {e!r}")
                    continue
                if code != 200 or not body.endswith(":" + p):
                    failures.append(f"{p}: {code} {body}")

        threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert failures == []
    seen: dict[str, int] = {}
    for r in replicas:
        for ran in r.ran():
            seen[ran.body] = seen.get(ran.body, 0) + 1
    assert sent_back, "no call was sent back"
    assert len(seen) == workers * per_worker
    assert {n for n in seen.values()} == {1}, "every call ran exactly once"


def test_requests_adapter_names_the_missing_extra() -> None:
    code = (
        "import sys; sys.modules['requests'] = None\n"
        "try:\n"
        "    from fulcrum_client import FulcrumAdapter\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert "pip install 'fulcrum-client[requests]'" in out.stdout


def test_callers_trace_extension_sees_every_event() -> None:
    """The transports watch each attempt's httpcore trace events (to tell a
    reused connection) and pass every one on to the caller's own trace
    callback, sync and async, in order."""
    srv = Server(lambda h: reply(h, 200, b"ok"))
    try:
        seen: list[str] = []

        def trace(name: str, info: dict[str, object]) -> None:
            seen.append(name)

        with httpx.Client(transport=BindingTransport()) as client:
            for _ in range(2):
                assert client.get(srv.url + "/a", extensions={"trace": trace}).text == "ok"
        assert seen.count("connection.connect_tcp.started") == 1, seen  # the second call reuses the connection
        assert seen.count("http11.send_request_headers.started") == 2, seen
        assert seen.index("connection.connect_tcp.started") < seen.index("http11.send_request_headers.started")

        aseen: list[str] = []

        async def atrace(name: str, info: dict[str, object]) -> None:
            aseen.append(name)

        async def main() -> None:
            async with httpx.AsyncClient(transport=AsyncBindingTransport()) as client:
                for _ in range(2):
                    assert (await client.get(srv.url + "/a", extensions={"trace": atrace})).text == "ok"

        asyncio.run(main())
        assert aseen.count("connection.connect_tcp.started") == 1, aseen
        assert aseen.count("http11.send_request_headers.started") == 2, aseen
    finally:
        srv.kill()
