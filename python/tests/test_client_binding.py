"""The shared decision module, fulcrum_client._binding, driven directly: no
I/O, the generator's operations answered by the test."""

from __future__ import annotations

from typing import Any

import pytest

from fulcrum_client._binding import (
    NOT_SENT,
    SENT,
    Answer,
    BindingState,
    Call,
    Discard,
    Failure,
    Peek,
    Send,
    TooManyHopsError,
    _path_and_query,
    binding_from,
    door_key,
    own_unavailable,
    parse_front_doors,
    replayable_on_new_connection,
    run_call,
    send_again_on_new_connection,
)


def answer(status: int, **headers: str) -> Answer:
    h = {k.replace("_", "-").lower(): v for k, v in headers.items()}
    return Answer(status, lambda name: h.get(name.lower()))


def state(**kw: Any) -> BindingState:
    opts: dict[str, Any] = {
        "client_id": "me",
        "front_doors": (),
        "max_hops": 0,
        "max_buffered_body": 0,
        "replicated": False,
    }
    opts.update(kw)
    return BindingState(**opts)


def call(url: str = "http://fd:8000/x?q=1", replayable: bool = True, headers: tuple[str, ...] = ()) -> Call:
    names = {h.lower() for h in headers}
    return Call("POST", url, lambda n: n.lower() in names, replayable)


def redirect(to: str, replica: str = "r1") -> Answer:
    return answer(307, location=to, fulcrum_group="g", fulcrum_replica=replica)


class Driver:
    """Runs one call's generator, answering each Send with the next scripted
    result; records the operations."""

    def __init__(self, st: BindingState, c: Call) -> None:
        self.gen = run_call(st, c)
        self.ops: list[Any] = []

    def run(self, *results: Any) -> str:
        script = list(results)
        try:
            op = next(self.gen)
            while True:
                self.ops.append(op)
                if isinstance(op, Send):
                    res: Any = script.pop(0)
                elif isinstance(op, Peek):
                    res = script.pop(0)
                else:
                    res = None
                op = self.gen.send(res)
        except StopIteration:
            assert not script, f"results left: {script}"
            return "returned"

    def sends(self) -> list[Send]:
        return [op for op in self.ops if isinstance(op, Send)]


@pytest.mark.parametrize(
    "location, request_url, want",
    [
        ("http://r1:9/x?q=1", "http://fd/x?q=1", ("http://r1:9", "")),
        ("http://r1:9/api/v2/x", "http://fd/x", ("http://r1:9/api/v2", "/api/v2")),
        ("/x", "http://fd:1/x", ("http://fd:1", "")),  # relative: against the request
        ("http://r1:9/other", "http://fd/x", None),  # not the request's path
        ("ftp://r1:9/x", "http://fd/x", None),
    ],
)
def test_binding_from(location: str, request_url: str, want: tuple[str, str] | None) -> None:
    b = binding_from(redirect(location), request_url)
    if want is None:
        assert b is None
    else:
        assert b is not None and (b.url, b.prefix, b.header) == (*want, "g/r1")


def test_binding_from_needs_group_and_replica() -> None:
    assert binding_from(answer(307, location="http://r1/x", fulcrum_group="g"), "http://fd/x") is None
    assert binding_from(answer(307, location="http://r1/x", fulcrum_replica="r"), "http://fd/x") is None


@pytest.mark.parametrize(
    "url, want",
    [
        ("http://a:1/x/y?q=1#f", "/x/y?q=1"),
        ("http://a:1?q", "?q"),
        ("http://a:1", ""),
        ("https://[::1]:8/p", "/p"),
    ],
)
def test_path_and_query(url: str, want: str) -> None:
    assert _path_and_query(url) == want


def test_door_keys_are_normalised() -> None:
    assert door_key("HTTP://Example.COM:80/x") == ("http", "example.com")
    assert door_key("https://h:443") == ("https", "h")
    assert door_key("http://h:8080") == ("http", "h:8080")
    assert parse_front_doors(["http://a:1", "http://a:1/", "http://b:2"]) == (("http", "a:1"), ("http", "b:2"))


@pytest.mark.parametrize(
    "body, group, want",
    [
        ('{"error":{"code":"no_replica","group":"g"}}', "g", True),
        ('{"error":{"code":"overloaded","group":"g"}}', "g", True),
        ('{"error":{"code":"other","group":"g"}}', "g", False),
        ('{"error":{"code":"no_replica","group":"h"}}', "g", False),
        ('{"error":{"code":"no_replica","group":"g"', "g", False),  # cut: not JSON
        ("busy", "", False),
    ],
)
def test_own_unavailable(body: str, group: str, want: bool) -> None:
    a = answer(503, fulcrum_group=group) if group else answer(503)
    assert own_unavailable(a, body.encode()) is want


def test_bind_then_straight_to_the_replica() -> None:
    st = state()
    d = Driver(st, call())
    assert d.run(redirect("http://r1:9/x?q=1"), answer(200)) == "returned"
    to_fd, to_r1 = d.sends()
    assert to_fd.url == "http://fd:8000/x?q=1" and not to_fd.rewritten and "Fulcrum-Binding" in to_fd.del_headers
    assert dict(to_fd.set_headers)["Fulcrum-Client"] == "me" and "Fulcrum-Sequence" in dict(to_fd.set_headers)
    assert to_r1.url == "http://r1:9/x?q=1" and to_r1.host == "r1:9" and to_r1.to_replica
    assert dict(to_r1.set_headers) == {"Fulcrum-Binding": "g/r1", "Fulcrum-Client": "me"}
    d2 = Driver(st, call())
    d2.run(answer(200))
    assert [s.url for s in d2.sends()] == ["http://r1:9/x?q=1"]


def test_not_sent_rebinds_with_the_hint_sent_is_raised() -> None:
    st = state()
    Driver(st, call()).run(redirect("http://r1:9/x?q=1"), answer(200))
    d = Driver(st, call())
    d.run(Failure(ConnectionRefusedError(), NOT_SENT), redirect("http://r2:9/x?q=1", "r2"), answer(200))
    hint = dict(d.sends()[1].set_headers)
    assert (hint["Fulcrum-Binding"], hint["Fulcrum-Rebind"]) == ("g/r1", "unreachable")
    err = ConnectionResetError()
    with pytest.raises(ConnectionResetError):
        Driver(st, call()).run(Failure(err, SENT))
    assert st.binding(("http", "fd:8000")) is None, "the binding is dropped"


def test_not_replayable_returns_the_redirect() -> None:
    st = state()
    d = Driver(st, call(replayable=False))
    assert d.run(redirect("http://r1:9/x?q=1")) == "returned"
    assert len(d.sends()) == 1 and not any(isinstance(op, Discard) for op in d.ops)
    assert st.binding(("http", "fd:8000")) is not None


def test_hops_are_bounded() -> None:
    st = state(max_hops=1)
    rebind = answer(307, location="http://fd:8000/x?q=1", fulcrum_rebind="1")
    with pytest.raises(TooManyHopsError, match="1 for POST http://fd:8000/x"):
        Driver(st, call()).run(redirect("http://r1:9/x?q=1"), rebind)


def test_front_door_set_moves_on_when_not_sent() -> None:
    st = state(front_doors=["http://a:1", "http://b:2"])
    d = Driver(st, call("http://a:1/x"))
    d.run(Failure(ConnectionRefusedError(), NOT_SENT), redirect("http://r1:9/x"), answer(200))
    assert [s.url for s in d.sends()] == ["http://a:1/x", "http://b:2/x", "http://r1:9/x"]
    assert d.sends()[1].rewritten and d.sends()[1].host == "b:2"
    assert st.current(st.set_of(("http", "a:1"))) == 1, "the next call goes to b first"  # type: ignore[arg-type]


def test_sequences_are_fresh_and_never_zero() -> None:
    st = state()
    st._seq = (1 << 64) - 2
    assert [st.take_sequence() for _ in range(3)] == [(1 << 64) - 1, 1, 2]


def test_identity_kept_when_the_caller_sets_it() -> None:
    st = state()
    d = Driver(st, call(headers=("Idempotency-Key",)))
    d.run(answer(200))
    assert set(dict(d.sends()[0].set_headers)) == {"Fulcrum-Client"}


@pytest.mark.parametrize(
    ("method", "headers", "body_replayable", "want"),
    [
        ("GET", (), True, True),
        ("HEAD", (), True, True),
        ("OPTIONS", (), True, True),
        ("TRACE", (), True, True),
        ("POST", (), True, False),
        ("PUT", (), True, False),
        ("DELETE", (), True, False),
        ("PATCH", (), True, False),
        ("POST", ("Idempotency-Key",), True, True),
        ("POST", ("idempotency-key",), True, True),
        ("PUT", ("X-Idempotency-Key",), True, True),
        ("POST", ("Fulcrum-Sequence",), True, False),
        ("GET", (), False, False),
        ("POST", ("Idempotency-Key",), False, False),
    ],
)
def test_replayable_on_new_connection(method: str, headers: tuple[str, ...], body_replayable: bool, want: bool) -> None:
    """Go net/http's Request.isReplayable: a body that can be sent again,
    and GET, HEAD, OPTIONS or TRACE or an idempotency key header."""
    names = {h.lower() for h in headers}
    c = Call(method, "http://fd:8000/x", lambda n: n.lower() in names, body_replayable)
    assert replayable_on_new_connection(c) is want


@pytest.mark.parametrize(
    ("replayable", "reused", "no_answer", "want"),
    [
        (True, True, True, True),
        (False, True, True, False),  # may have run: net/http does not resend it
        (True, False, True, False),  # a fresh connection the server hung up on
        (True, True, False, False),  # an answer had begun (or a timeout)
        (False, False, False, False),
    ],
)
def test_send_again_on_new_connection(replayable: bool, reused: bool, no_answer: bool, want: bool) -> None:
    """Go net/http's persistConn.shouldRetryRequest for a replayable call:
    only a reused connection that failed before any byte of an answer."""
    assert send_again_on_new_connection(replayable, reused, no_answer) is want
