"""fulcrum's wire messages as a Python monitor reads and writes them: the
load report (decoded exactly as the balancer's Go ``protocol.DecodeReport``
does, so that a monitor can check what it sends), the advisory the
balancer answers with, and the registration answer.

Every decoder raises :class:`FieldError` naming the field (a dotted path
with ``[i]`` indices, such as ``"clients[3].rate"``, or ``"body"`` for the
body as a whole), the value given and what is allowed. The rules, their
order and the field names are pinned by the shared test vectors under
``protocol/testdata/`` (see its README.md), which the Go and Python tests
both run.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from .protocol import MAX_CLIENT_ID_LENGTH, MAX_REPORT_BYTES, MAX_REPORT_CLIENTS, MAX_WORKERS

MAX_LOAD = 1e12
"""Bound of a report's load."""
MAX_RATE = 1e12
"""Bound of a client's call rate (calls/s)."""
MAX_SHARE = 1.5
"""Largest share metric accepted; values in (1, MAX_SHARE] are taken as 1."""
MAX_LATENCY_MS = 1e8
"""Bound of the latency quantile metrics (ms)."""
MAX_BOUND_CLIENTS = 1e9
"""Bound of the bound_clients metric."""

SHARE_METRICS = ("cpu", "utilization", "bw", "cpu_other")
"""Metrics that are shares of a capacity (0-1)."""
STATUS_METRICS = ("latency_p50_ms", "latency_p99_ms", "bound_clients")
"""Optional metrics a replica's status shows, checked in this order."""

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1


class FieldError(ValueError):
    """A validation failure of one field: which field, the value given (None
    when it is missing) and what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        super().__init__(field, value, allowed)
        self.field = field
        self.value = value
        self.allowed = allowed

    def __str__(self) -> str:
        shown = "(missing)" if self.value is None else repr(self.value)
        return f"{self.field}: invalid value {shown}, {self.allowed}"


@dataclass(frozen=True)
class Worker:
    """One process of a multi-process replica: index in [0, count), count in
    [1, MAX_WORKERS]."""

    index: int
    count: int

    def validate(self) -> None:
        """Raises FieldError on "worker.count", then "worker.index"."""
        if not 1 <= self.count <= MAX_WORKERS:
            raise FieldError("worker.count", self.count, f"must be a whole number in [1, {MAX_WORKERS}]")
        if not 0 <= self.index < self.count:
            raise FieldError(
                "worker.index", self.index, f"must be a whole number in [0, {self.count - 1}] (worker.count - 1)"
            )


@dataclass(frozen=True)
class ClientRate:
    """A bound client and its call rate (calls/s) over the report window."""

    id: str
    rate: float


@dataclass(frozen=True)
class Report:
    """A monitor's load report (Go protocol.Report)."""

    load: float
    metrics: dict[str, float] = field(default_factory=dict)
    clients: list[ClientRate] = field(default_factory=list)
    worker: Worker | None = None

    def to_wire(self) -> dict[str, Any]:
        """The report as the JSON object a monitor sends (empty members left
        out)."""
        out: dict[str, Any] = {"load": self.load}
        if self.metrics:
            out["metrics"] = dict(self.metrics)
        if self.clients:
            out["clients"] = [{"id": c.id, "rate": c.rate} for c in self.clients]
        if self.worker is not None:
            out["worker"] = {"index": self.worker.index, "count": self.worker.count}
        return out


@dataclass(frozen=True)
class Advisory:
    """The balancer's answer to a report (Go protocol.Advisory). An advisory
    is identified by (term, epoch); report_interval is in seconds (0: not
    given)."""

    advisory: str = ""
    shed: float = 0.0
    term: int = 0
    epoch: int = 0
    clients: tuple[str, ...] = ()
    report_interval: float = 0.0


@dataclass(frozen=True)
class Registered:
    """The answer to a registration (Go protocol.Registered);
    report_interval in seconds (0: not given)."""

    id: str
    token: str
    front_door: str = ""
    report_url: str = ""
    report_interval: float = 0.0


class _Object(list):  # type: ignore[type-arg]
    """A JSON object as its (key, value) pairs in document order, duplicates
    kept."""


class _Huge(float):
    """A JSON number no float64 holds (it decodes to an error, as in Go)."""


def _parse_int(s: str) -> Any:
    try:
        return int(s)
    except ValueError:  # more digits than Python converts
        return _Huge(math.inf)


def _parse_float(s: str) -> float:
    v = float(s)
    return _Huge(v) if math.isinf(v) else v


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse(data: bytes | str) -> Any:
    """Parses one JSON value keeping objects as _Object; raises FieldError on
    "body" for anything that is not valid JSON."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else data
    try:
        return json.loads(
            text,
            object_pairs_hook=_Object,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_no_constant,
        )
    except (ValueError, RecursionError) as e:
        raise FieldError("body", _cut(text), f"must be a single valid JSON object: {e}") from None


def _cut(s: str, n: int = 64) -> str:
    return s if len(s) <= n else s[:n] + "..."


def _join(prefix: str, key: str) -> str:
    return key if prefix == "" else f"{prefix}.{key}"


def _first_duplicate(v: Any, path: str) -> str | None:
    """The path of the first key that repeats in its object, in document
    order (Go protocol.UniqueKeys, without case folding)."""
    if isinstance(v, _Object):
        seen: set[str] = set()
        for k, x in v:
            if k in seen:
                return _join(path, k if k != "" else '""')
            seen.add(k)
            found = _first_duplicate(x, _join(path, k))
            if found is not None:
                return found
    elif isinstance(v, list):
        for i, x in enumerate(v):
            found = _first_duplicate(x, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def _known_keys(prefix: str, obj: dict[str, Any], *known: str) -> None:
    unknown = sorted(k for k in obj if k not in known)
    if unknown:
        name = unknown[0] if unknown[0] != "" else '""'
        raise FieldError(prefix + name, "unknown field", "must be one of: " + ", ".join(known))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(field_name: str, v: Any) -> float:
    """A JSON number a float64 holds, as a float."""
    if not _is_number(v) or isinstance(v, _Huge):
        raise FieldError(field_name, v, "must be a finite number")
    try:
        return float(v)
    except OverflowError:
        raise FieldError(field_name, v, "must be a finite number") from None


def _whole(field_name: str, v: Any, lo: int, hi: int, allowed: str) -> int:
    """A JSON integer literal (no fraction, no exponent) in [lo, hi]."""
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise FieldError(field_name, v, allowed)
    return v


def decode_worker(v: Any) -> Worker:
    """Decodes and validates a parsed worker object {"index": i, "count": n}:
    both keys required, whole numbers, no other keys. Raises FieldError on
    "worker", "worker.<key>", "worker.index" or "worker.count"."""
    if not isinstance(v, _Object):
        raise FieldError("worker", v, 'must be an object {"index": i, "count": n}')
    obj = dict(v)
    _known_keys("worker.", obj, "index", "count")
    got: dict[str, int] = {}
    for key in ("index", "count"):
        if key not in obj:
            raise FieldError("worker." + key, None, "is required: a whole number")
        got[key] = _whole("worker." + key, obj[key], _INT64_MIN, _INT64_MAX, "must be a whole number")
    w = Worker(index=got["index"], count=got["count"])
    w.validate()
    return w


def decode_report(data: bytes | str) -> Report:
    """Decodes and validates a report body exactly as the balancer does (Go
    protocol.DecodeReport): one JSON object with a required "load" and
    optional "metrics", "clients" and "worker"; keys match exactly and
    appear once; share metrics in (1, MAX_SHARE] come back as 1. Raises
    FieldError for the first problem, in the balancer's order (see
    protocol/testdata/README.md)."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_REPORT_BYTES:
        raise FieldError("body", len(raw), f"must be at most {MAX_REPORT_BYTES} bytes")
    top = _parse(raw)
    if not isinstance(top, _Object):
        raise FieldError("body", top, "must be a JSON object")
    dup = _first_duplicate(top, "")
    if dup is not None:
        raise FieldError(dup, "duplicate key", "must appear only once in its object")
    obj = dict(top)
    _known_keys("", obj, "load", "metrics", "clients", "worker")
    if "load" not in obj:
        raise FieldError("load", None, "is required: a finite number >= 0")
    load = _number("load", obj["load"])
    metrics: dict[str, float] = {}
    ms = obj.get("metrics")
    if ms is not None:
        if not isinstance(ms, _Object):
            raise FieldError("metrics", ms, "must be an object of metric names to numbers")
        mobj = dict(ms)
        for k in sorted(mobj):
            metrics[k] = _number("metrics." + k, mobj[k])
    clients: list[ClientRate] = []
    cs = obj.get("clients")
    if cs is not None:
        if not isinstance(cs, list) or isinstance(cs, _Object):
            raise FieldError("clients", cs, 'must be a list of {"id", "rate"} objects')
        if len(cs) > MAX_REPORT_CLIENTS:
            raise FieldError("clients", len(cs), f"at most {MAX_REPORT_CLIENTS} clients")
        for i, c in enumerate(cs):
            clients.append(_decode_client(f"clients[{i}]", c))
    worker = decode_worker(obj["worker"]) if "worker" in obj else None
    r = Report(load=load, metrics=metrics, clients=clients, worker=worker)
    validate_report(r)
    for k in SHARE_METRICS:
        if k in metrics:
            metrics[k] = min(metrics[k], 1.0)
    return r


def _decode_client(at: str, c: Any) -> ClientRate:
    if not isinstance(c, _Object):
        raise FieldError(at, c, 'must be an object {"id": "...", "rate": calls/s}')
    obj = dict(c)
    _known_keys(at + ".", obj, "id", "rate")
    if "id" not in obj:
        raise FieldError(at + ".id", None, "is required: a string of 1 to 128 characters")
    cid = obj["id"]
    if not isinstance(cid, str):
        raise FieldError(at + ".id", cid, "must be a string of 1 to 128 characters")
    if "rate" not in obj:
        raise FieldError(at + ".rate", None, "is required: a finite number >= 0")
    return ClientRate(id=cid, rate=_number(at + ".rate", obj["rate"]))


def _id_bytes(cid: str) -> int:
    return len(cid.encode("utf-8", errors="surrogatepass"))


def validate_report(r: Report) -> None:
    """Checks a report as the balancer does (Go Report.Validate): finite,
    non-negative load and rates within MAX_LOAD and MAX_RATE, non-empty
    metric names, share metrics in [0, MAX_SHARE], latency quantiles in
    [0, MAX_LATENCY_MS], bound_clients a whole number in [0,
    MAX_BOUND_CLIENTS], at most MAX_REPORT_CLIENTS clients with ids of 1 to
    128 UTF-8 bytes. A monitor may call it on the report it is about to
    send. Raises FieldError."""
    if not (math.isfinite(r.load) and r.load >= 0):
        raise FieldError("load", r.load, "must be a finite number >= 0")
    for k, v in r.metrics.items():
        if k == "":
            raise FieldError("metrics", k, "metric names must be non-empty")
        if not math.isfinite(v):
            raise FieldError("metrics." + k, v, "must be a finite number")
    if len(r.clients) > MAX_REPORT_CLIENTS:
        raise FieldError("clients", len(r.clients), f"at most {MAX_REPORT_CLIENTS} clients")
    for i, c in enumerate(r.clients):
        if c.id == "" or _id_bytes(c.id) > MAX_CLIENT_ID_LENGTH:
            raise FieldError(f"clients[{i}].id", c.id, f"must be 1 to {MAX_CLIENT_ID_LENGTH} characters")
        if not (math.isfinite(c.rate) and c.rate >= 0):
            raise FieldError(f"clients[{i}].rate", c.rate, "must be a finite number >= 0")
    if r.worker is not None:
        r.worker.validate()
    if r.load > MAX_LOAD:
        raise FieldError("load", r.load, f"must be a finite number in [0, {MAX_LOAD:g}]")
    for k in sorted(r.metrics):
        v = r.metrics[k]
        if k in SHARE_METRICS and not 0 <= v <= MAX_SHARE:
            raise FieldError("metrics." + k, v, f"must be a share in [0, 1] (up to {MAX_SHARE:g} is taken as 1)")
    for k in STATUS_METRICS:
        if k not in r.metrics:
            continue
        v = r.metrics[k]
        if k == "bound_clients":
            if not 0 <= v <= MAX_BOUND_CLIENTS or v != math.trunc(v):
                raise FieldError(
                    "metrics." + k, v, f"must be a whole number of clients in [0, {MAX_BOUND_CLIENTS:g}]"
                )
        elif not 0 <= v <= MAX_LATENCY_MS:
            raise FieldError("metrics." + k, v, f"must be a latency in milliseconds in [0, {MAX_LATENCY_MS:g}]")
    for i, c in enumerate(r.clients):
        if c.rate > MAX_RATE:
            raise FieldError(f"clients[{i}].rate", c.rate, f"must be a finite number of calls/s in [0, {MAX_RATE:g}]")


_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]+)")


def parse_duration(s: str) -> float:
    """Parses a non-negative Go duration string ("500ms", "1m30s", "250us",
    "0") into seconds. Raises ValueError."""
    rest = s
    neg = False
    if rest[:1] in ("-", "+"):
        neg, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0.0
    if rest == "":
        raise ValueError(f"invalid duration {s!r}")
    total = 0.0
    pos = 0
    while pos < len(rest):
        m = _DURATION_PART.match(rest, pos)
        if m is None or m.group(1) in ("", ".") or m.group(2) not in _DURATION_UNITS:
            raise ValueError(f"invalid duration {s!r}: must be a Go duration such as \"500ms\" or \"2s\"")
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if neg and total != 0:
        raise ValueError(f"invalid duration {s!r}: must not be negative")
    return total


def _duration(field_name: str, v: Any) -> float:
    if v is None:
        return 0.0
    if not isinstance(v, str):
        raise FieldError(field_name, v, 'must be a duration string such as "500ms" or "2s"')
    try:
        return parse_duration(v)
    except ValueError as e:
        raise FieldError(field_name, v, str(e)) from None


def _object(data: bytes | str) -> list[tuple[str, Any]]:
    top = _parse(data)
    if not isinstance(top, _Object):
        raise FieldError("body", top, "must be a JSON object")
    return list(top)


def decode_advisory(data: bytes | str) -> Advisory:
    """Decodes an advisory (a report's answer, or a pull's Fulcrum-Advisory
    header) as the Go monitor does: every member optional (absent or null:
    its zero value), unknown members ignored; "advisory" a string (a level
    the monitor does not know is kept here and treated as nominal by the
    monitor), "shed" a number, "term" and "epoch" whole numbers in uint64,
    "clients" a list of strings, "report_interval" a Go duration string.
    Raises FieldError for the first wrong member in document order, or on
    "body" for a body that is no JSON object."""
    out: dict[str, Any] = {}
    for k, v in _object(data):
        if k == "advisory":
            if v is not None and not isinstance(v, str):
                raise FieldError(k, v, "must be a string: nominal, high or drain")
            out[k] = v or ""
        elif k == "shed":
            out[k] = 0.0 if v is None else _number(k, v)
        elif k in ("term", "epoch"):
            out[k] = 0 if v is None else _whole(k, v, 0, _UINT64_MAX, "must be a whole number in [0, 2^64)")
        elif k == "clients":
            if v is None:
                out[k] = ()
            elif not isinstance(v, list) or isinstance(v, _Object) or not all(c is None or isinstance(c, str) for c in v):
                raise FieldError(k, v, "must be a list of client ids (strings)")
            else:
                out[k] = tuple(c or "" for c in v)
        elif k == "report_interval":
            out[k] = _duration(k, v)
    return Advisory(**out)


def decode_registration_answer(data: bytes | str) -> Registered:
    """Decodes the answer to a registration as the Go monitor does: "id" and
    "token" required non-empty strings; "front_door" and "report_url"
    optional strings; "report_interval" an optional Go duration string;
    unknown members ignored. Raises FieldError (on "body" for a body that is
    no JSON object, then the first wrong member in document order, then a
    missing "id", then a missing "token")."""
    out: dict[str, Any] = {}
    for k, v in _object(data):
        if k in ("id", "token", "front_door", "report_url"):
            if v is not None and not isinstance(v, str):
                raise FieldError(k, v, "must be a string")
            out[k] = v or ""
        elif k == "report_interval":
            out[k] = _duration(k, v)
    for k in ("id", "token"):
        if not out.get(k):
            raise FieldError(k, out.get(k), "is required: a non-empty string")
    return Registered(**out)
