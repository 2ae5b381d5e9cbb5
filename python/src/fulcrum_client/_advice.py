"""Advisories as the monitor obeys them (decoded by fulcrum_client.wire):
the term rule, the shed choice and the once-per-advisory send-back set.
Pure: no I/O, no clock.

The rules are the Go monitor's (monitor/term.go, advice.go, shed.go):

- an advisory whose term is below the highest seen since the monitor last
  registered is ignored whole (level, clients and report_interval);
- an advisory is identified by (level, term, epoch): the same one again
  changes nothing, a new one lets every client be sent back once more;
- under ``high`` the named clients, or when none are named the busiest
  bound clients whose rates fit in the shed amount (plus at most one
  larger client when that brings the total closer), are each sent back
  once; under ``drain`` every bound call is; an unknown level is nominal.

A worker of a multi-process replica (index i of n) sends back only the
named clients it owns, worker_of(client, n) == i, so that each client is
sent back once by the replica as a whole; the first call of a named client
it does not own (once per advisory) runs, answered with Connection: close,
so that a client keeping one connection to this worker reaches another
(its owner among them) with its next call. Without names it chooses among
the clients it saw, for the shed its advisory gives: the balancer already
gives each worker its part of the replica's shed (in proportion to the
worker's load), so the workers together shed the replica's amount once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from fulcrum_client.protocol import DRAIN, HIGH, NOMINAL, worker_of
from fulcrum_client.wire import Advisory

_SHED_EPSILON = 1e-9
_LEVELS = (NOMINAL, HIGH, DRAIN)

NOMINAL_ADVISORY = Advisory(advisory=NOMINAL)


def admit_term(highest: int, term: int) -> tuple[bool, int]:
    """Whether a monitor that has seen terms up to highest since it last
    registered applies an advisory of term (not when term < highest), and
    the highest term seen after it."""
    if term < highest:
        return False, highest
    return True, term


def same_advisory(a: Advisory, b: Advisory) -> bool:
    """Whether b is the advisory a: the same level, term and epoch."""
    return a.advisory == b.advisory and a.term == b.term and a.epoch == b.epoch


def choose_shed(rates: Sequence[tuple[str, float]], target: float) -> list[str]:
    """The bound clients to send back so that their rates add up as closely
    as possible to target (calls/s). rates are sorted busiest first. Busiest
    first, each client that still fits is taken; if some of the target is
    left, the one skipped client whose move brings the total closest is
    added, if any brings it closer (rate < 2 * left)."""
    if target <= 0:
        return []
    chosen: list[str] = []
    left = target
    skipped = -1
    for i, (cid, rate) in enumerate(rates):
        if left <= _SHED_EPSILON or rate <= 0:
            break
        if rate <= left + _SHED_EPSILON:
            chosen.append(cid)
            left -= rate
            continue
        skipped = i
    if left > _SHED_EPSILON and skipped >= 0 and rates[skipped][1] < 2 * left:
        chosen.append(rates[skipped][0])
    return chosen


def busiest_first(rates: dict[str, float]) -> list[tuple[str, float]]:
    """rates ordered by descending rate, then by id (deterministic)."""
    return sorted(rates.items(), key=lambda kv: (-kv[1], kv[0]))


@dataclass
class Advice:
    """An advisory as the hot path applies it. Immutable but for the sent
    set; a new advisory is a new Advice, so every client may be sent back
    once again. send_back is safe for concurrent use."""

    advisory: Advisory = NOMINAL_ADVISORY
    drain: bool = False
    targets: frozenset[str] = frozenset()
    others: frozenset[str] = frozenset()
    _sent: set[str] = field(default_factory=set)
    _closed: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def send_back(self, client: str) -> bool:
        """Whether a bound call of client is answered with a rebind
        redirect; if so the client is marked sent for this advisory."""
        if self.drain:
            return True
        if not client or client not in self.targets:
            return False
        with self._lock:
            if client in self._sent:
                return False
            self._sent.add(client)
            return True

    def reconnect(self, client: str) -> bool:
        """Whether a call of client that runs is answered with Connection:
        close: the advisory names client but another worker owns it (see
        the module doc). True at most once per client per advisory."""
        if not client or client not in self.others:
            return False
        with self._lock:
            if client in self._closed:
                return False
            self._closed.add(client)
            return True

    def chosen(self) -> list[str]:
        """The clients sent back under high, sorted (for logs)."""
        return sorted(self.targets)


def new_advice(
    adv: Advisory,
    rates: Sequence[tuple[str, float]],
    target: Callable[[float], float],
    worker: tuple[int, int] | None = None,
) -> Advice:
    """The Advice for adv. rates are the bound clients' rates over the last
    window, busiest first; target converts adv.shed into calls/s. worker is
    (index, count) for a worker of a multi-process replica: of the named
    clients it keeps only those it owns."""
    if adv.advisory == DRAIN:
        return Advice(advisory=adv, drain=True)
    if adv.advisory != HIGH:
        return Advice(advisory=adv)
    names: Sequence[str] = adv.clients
    others: frozenset[str] = frozenset()
    if not names:
        names = choose_shed(rates, target(adv.shed))
    elif worker is not None:
        index, count = worker
        others = frozenset(c for c in names if worker_of(c, count) != index)
        names = [c for c in names if c not in others]
    return Advice(advisory=adv, targets=frozenset(names), others=others)


def normalise_level(level: str) -> str:
    """level, or nominal when it is not a level the monitor knows."""
    return level if level in _LEVELS else NOMINAL
