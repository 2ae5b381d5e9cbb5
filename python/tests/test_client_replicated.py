"""Calls to a replicated group (binding replicated), whose bridges
deduplicate a call by its Fulcrum-Session and Fulcrum-Sequence: the cases
of the Go client's replicated_test.go, against real local servers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from client_servers import Bridge, Log
from client_callers import errors_of, make  # noqa: F401 - fixtures


@pytest.fixture
def bridges() -> Iterator[tuple[Log, Bridge, Bridge]]:
    log = Log()
    a, b = Bridge("a", log), Bridge("b", log)
    yield log, a, b
    a.server.kill()
    b.server.kill()


@pytest.mark.parametrize("fault, outcome, appended", [("drop", "dropped", True), ("cut", "cut", True), ("busy", "busy", False)])
@pytest.mark.parametrize("learned", [False, True], ids=["replicated-option", "learned"])
@pytest.mark.parametrize("streamed", [False, True], ids=["bytes", "buffered"])
def test_replicated_call_moves_to_the_next_front_door(bridges, make, fault: str, outcome: str, appended: bool, learned: bool, streamed: bool) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    log, a, b = bridges
    c = make(front_doors=[a.url, b.url], replicated=not learned)
    if learned:
        code, body, headers = c.do("POST", a.url + "/increment", b"first", streamed=streamed)
        assert code == 200 and {k.lower(): v for k, v in headers.items()}["fulcrum-position"] == "1"
    before = len(a.calls())
    setattr(a, fault, 1)
    code, body, headers = c.do("POST", a.url + "/increment", b"payload", streamed=streamed)
    assert (code, body) == (200, "b:payload")
    first, second = a.calls()[before:], b.calls()
    assert [x.outcome for x in first] == [outcome] and [y.outcome for y in second] == ["answered"]
    x, y = first[0], second[0]
    assert x.session == c.client_id == x.client
    assert int(x.seq) > 0
    assert (y.session, y.seq, y.body) == (x.session, x.seq, "payload"), "sent again unchanged"
    assert y.existed == appended
    assert len(log.positions) == (2 if learned else 1), "the call is in the log once"
    assert {k.lower(): v for k, v in headers.items()}["fulcrum-position"] == ("2" if learned else "1")
    # The second front door answered last: the next call goes there first.
    c.do("POST", a.url + "/increment", b"next")
    assert len(b.calls()) == 2


def test_replicated_all_front_doors_fail(bridges, make) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    log, a, b = bridges
    c = make(front_doors=[a.url, b.url], replicated=True)
    a.drop, b.cut = 1, 1
    with pytest.raises(errors_of(c), match="cut short"):
        c.do("POST", a.url + "/increment", b"x")
    assert (len(a.calls()), len(b.calls()), len(log.positions)) == (1, 1, 1)
    a.busy, b.busy = 1, 1
    assert c.do("POST", a.url + "/increment", b"y")[:2] == (503, "b busy"), "the last front door's 503"
    assert (len(a.calls()), len(b.calls())) == (2, 2)


def test_replicated_lone_front_door_gets_a_second_try(bridges, make) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    log, a, _ = bridges
    c = make()
    c.do("POST", a.url + "/increment", b"learn")
    a.drop = 1
    assert c.do("POST", a.url + "/increment", b"again", streamed=True)[:2] == (200, "a:again")
    calls = a.calls()[1:]
    assert len(calls) == 2 and calls[0].seq == calls[1].seq and calls[1].body == "again"
    assert len(log.positions) == 2
    a.drop = 2
    with pytest.raises(errors_of(c)):
        c.do("POST", a.url + "/increment", b"lost")
    assert len(a.calls()) == 5, "two tries of the failed call"
    a.busy = 1
    assert c.do("POST", a.url + "/increment", b"z")[0] == 503
    assert len(a.calls()) == 6, "a 503 is not sent again to the same front door"


def test_unknown_group_is_not_resent(bridges, make) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _, a, b = bridges
    c = make(front_doors=[a.url, b.url])
    a.drop = 1
    with pytest.raises(errors_of(c)):
        c.do("POST", a.url + "/x", b"x")
    assert b.calls() == [], "before an answer shows the group replicated, a call that may have run is returned"
