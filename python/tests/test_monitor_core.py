"""The monitor's pure core, driven with an injected clock: what a report
window yields, the advisory rules (term, once per advisory, shed choice,
drain, workers) and the small pure functions."""

from __future__ import annotations

import pytest

from fulcrum_client._advice import choose_shed
from fulcrum_client._monitor_core import Core, Registration, hist_bucket, hist_mid_ms, window_quantiles
from fulcrum_client.protocol import worker_of
from fulcrum_client.wire import Advisory

MS = 1_000_000
S = 1_000_000_000
FRONT = "http://127.0.0.1:8000"


def core(**kw: object) -> Core:
    c = Core(0, group="g", **kw)  # type: ignore[arg-type]
    c.adopt(Registration(id="r-1", token="t", front_door=FRONT + "/", report_interval=0.25))
    return c


def run(c: Core, client: str, at: int, took: int, bound: bool = True) -> bool:
    """One call of client from at lasting took ns; False when sent back."""
    call = c.begin(client, bound, at)
    if call is None:
        return False
    c.end(call, at + took)
    return True


def test_report_window_measures_rate_latency_quantiles_and_clients() -> None:
    c = core()
    assert c.interval == 0.25 and c.front_door == FRONT
    for i in range(30):
        run(c, "c1", i * MS, 2 * MS)
    for i in range(10):
        run(c, "c2", i * MS, 20 * MS)
    run(c, "", 0, 2 * MS, bound=False)  # a plain call: counted, not a client
    rep = c.close_window(S, cpu=0.25)
    m = rep["metrics"]
    assert m["rps"] == pytest.approx(41.0)
    assert m["inflight"] == 0
    assert m["latency_ms"] == pytest.approx((31 * 2 + 10 * 20) / 41)
    assert m["latency_p50_ms"] == pytest.approx(hist_mid_ms(hist_bucket(2 * MS)))
    assert m["latency_p99_ms"] == pytest.approx(hist_mid_ms(hist_bucket(20 * MS)))
    assert m["bound_clients"] == 2
    assert m["cpu"] == 0.25
    assert rep["load"] == pytest.approx(41.0)
    assert rep["clients"] == [{"id": "c1", "rate": 30.0}, {"id": "c2", "rate": 10.0}]
    assert "worker" not in rep
    # The next window: latency_ms is an EWMA (weight 0.5) of the means.
    run(c, "c1", S, 10 * MS)
    rep = c.close_window(2 * S)
    assert rep["metrics"]["latency_ms"] == pytest.approx(0.5 * 10 + 0.5 * (31 * 2 + 10 * 20) / 41)
    assert rep["metrics"]["bound_clients"] == 1
    assert "cpu" not in rep["metrics"]
    # A window of no length repeats the last report.
    assert c.close_window(2 * S) is rep


def test_idle_clients_are_forgotten_after_three_windows() -> None:
    c = core()
    run(c, "c1", 0, MS)
    assert c.close_window(S)["metrics"]["bound_clients"] == 1
    for w in range(2, 5):
        assert "clients" not in c.close_window(w * S)
    assert c._clients == {}


def test_inflight_load_and_quantiles_of_empty_window() -> None:
    c = core(load="inflight")
    call = c.begin("c1", True, 0)
    assert call is not None
    rep = c.close_window(S)
    assert rep["metrics"]["inflight"] == 1 and rep["load"] == 1
    assert "latency_p50_ms" not in rep["metrics"]
    assert window_quantiles([0] * 10) is None


def test_named_clients_go_back_once_per_advisory() -> None:
    c = core()
    assert c.apply(Advisory(advisory="high", shed=10, term=0, epoch=3, clients=("c1",)))
    assert not run(c, "c1", 0, MS)  # sent back
    assert run(c, "c1", 0, MS)  # once per advisory
    assert run(c, "c2", 0, MS)  # not named
    assert run(c, "", 0, MS)  # no id: never
    assert c.rebinds == 1
    # The same advisory again (same level, term, epoch) changes nothing.
    c.apply(Advisory(advisory="high", shed=10, term=0, epoch=3, clients=("c1",)))
    assert run(c, "c1", 0, MS)
    # A new epoch sends it back once more.
    c.apply(Advisory(advisory="high", shed=10, term=0, epoch=4, clients=("c1",)))
    assert not run(c, "c1", 0, MS)
    assert run(c, "c1", 0, MS)


def test_unbound_calls_and_missing_front_door_never_rebind() -> None:
    c = Core(0, group="g")
    c.apply(Advisory(advisory="drain", epoch=1))
    assert run(c, "c1", 0, MS)  # not registered: no front door to send to
    c.adopt(Registration(id="r", token="t", front_door=FRONT))
    c.apply(Advisory(advisory="drain", epoch=2))
    assert run(c, "c1", 0, MS, bound=False)
    assert not run(c, "c1", 0, MS) and not run(c, "c1", 0, MS)  # drain: every bound call
    assert c.owns_binding("g/r-1") and not c.owns_binding("other/r-1")


def test_term_rules() -> None:
    c = core()
    assert c.apply(Advisory(advisory="high", term=5, epoch=1, clients=("c1",), report_interval=1.0))
    assert not c.apply(Advisory(advisory="nominal", term=4, epoch=9, report_interval=2.0))  # ignored whole
    assert c.advisory.term == 5 and c.interval == 1.0
    assert not run(c, "c1", 0, MS)
    # Registering again forgets the highest term.
    c.adopt(Registration(id="r", token="t2", front_door=FRONT))
    assert c.apply(Advisory(advisory="nominal", term=1, epoch=1))
    assert c.advisory.advisory == "nominal"
    # An unknown level is nominal.
    c.apply(Advisory(advisory="weird", term=1, epoch=2, clients=("c1",)))
    assert c.advisory.advisory == "nominal" and run(c, "c1", 0, MS)


def test_shed_without_names_takes_the_busiest_that_fit() -> None:
    c = core()
    for cid, n in (("a", 50), ("b", 30), ("c", 15), ("d", 5)):
        for i in range(n):
            run(c, cid, i, 1)
    c.close_window(S)
    c.apply(Advisory(advisory="high", shed=36, epoch=1))
    # b (30) fits, a (50) does not; then d (5); c (15) overshoots 1 by 14: no.
    assert c.chosen() == ["b", "d"]
    # With another load unit, shed is converted by the share of the rate.
    c2 = core(load_func=lambda: 200.0)
    for i in range(100):
        run(c2, "a" if i < 60 else "b", i, 1)
    c2.close_window(S)
    c2.apply(Advisory(advisory="high", shed=80, epoch=1))  # 80 of 200 load = 40 calls/s
    assert c2.chosen() == ["b"]


@pytest.mark.parametrize(
    ("rates", "target", "want"),
    [
        ([("a", 10.0)], 0, []),
        ([("a", 10.0), ("b", 5.0)], 5, ["b"]),
        ([("a", 10.0), ("b", 5.0)], 15, ["a", "b"]),
        ([("a", 100.0)], 10, []),  # far busier than the target: not moved
        ([("a", 12.0)], 10, ["a"]),  # overshoot 2 < left 10: closer
        ([("a", 8.0), ("b", 0.0)], 10, ["a"]),
    ],
)
def test_choose_shed(rates: list[tuple[str, float]], target: float, want: list[str]) -> None:
    assert choose_shed(rates, target) == want


def test_worker_sends_back_only_the_clients_it_owns() -> None:
    names = tuple(f"client-{i}" for i in range(20))
    owners = {n: worker_of(n, 3) for n in names}
    assert set(owners.values()) == {0, 1, 2}
    sent: dict[str, int] = {}
    for index in range(3):
        c = core(worker=(index, 3))
        c.apply(Advisory(advisory="high", epoch=1, clients=names))
        for n in names:
            if not run(c, n, 0, MS):
                sent[n] = sent.get(n, 0) + 1
        assert c.close_window(S)["worker"] == {"index": index, "count": 3}
    assert sent == dict.fromkeys(names, 1)  # each client once, by its owner
    c = core(worker=(1, 3))
    c.apply(Advisory(advisory="high", epoch=1, clients=names))
    assert c.chosen() == sorted(n for n in names if owners[n] == 1)


def test_histogram_buckets_match_go() -> None:
    # internal/loghist (the Go monitor's): one bucket per µs below 4, then four per power of two.
    assert [hist_bucket(us * 1000) for us in (0, 3, 4, 5, 7, 8, 100, 1000)] == [0, 3, 4, 5, 7, 8, 22, 35]
    assert hist_mid_ms(22) == pytest.approx(0.104)
    assert hist_bucket(10**18) == 4 * 36 - 1


def test_load_probe_median_of_same_bucket() -> None:
    c = core()
    assert c.load_probe() == {"rif": 0, "latency_ms": 0.0}
    for i in range(8):
        run(c, "", i, (i + 1) * MS)  # each alone: rif 1
    assert c.load_probe() == {"rif": 0, "latency_ms": 5.0}
