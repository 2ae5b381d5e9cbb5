"""Loads the shared wire test vectors (protocol/testdata/*.json, described
by its README.md and vectors.schema.json) for the Python runners."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

TESTDATA = Path(__file__).resolve().parents[2] / "protocol" / "testdata"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def load(kind: str, keys: set[str]) -> list[dict[str, Any]]:
    """The cases of testdata/<kind>.json. Fails on a wrong kind or version,
    a bad or repeated name, or a case member not in keys (so that a
    misspelt expectation is not silently unchecked)."""
    doc = json.loads((TESTDATA / f"{kind}.json").read_text(encoding="utf-8"))
    assert doc["kind"] == kind and doc["version"] == 1, f"{kind}.json: kind {doc['kind']!r} version {doc['version']!r}"
    cases: list[dict[str, Any]] = doc["cases"]
    assert cases, f"{kind}.json has no cases"
    names: set[str] = set()
    for c in cases:
        name = c.get("name", "")
        assert _NAME.match(name) and name not in names, f"{kind}.json: case name {name!r} bad or repeated"
        names.add(name)
        unknown = set(c) - keys - {"name", "doc"}
        assert not unknown, f"{kind}.json: case {name}: unknown members {sorted(unknown)}"
    return cases


def strict(obj: Any, allowed: set[str], where: str) -> dict[str, Any]:
    """obj, which must be an object with no member outside allowed (so
    that a misspelt expectation is not silently unchecked)."""
    assert isinstance(obj, dict), f"{where}: want an object, got {obj!r}"
    unknown = sorted(set(obj) - allowed)
    assert not unknown, f"{where}: unknown members {unknown}"
    return obj


def build_body(case: dict[str, Any]) -> bytes:
    """A case's body: body, then expand, then pad_to (README.md)."""
    body: str = case["body"]
    ex = case.get("expand")
    if ex is not None:
        assert body.count(ex["marker"]) == 1, f"expand: marker {ex['marker']!r} must occur once"
        items = [ex["item"].replace("{i}", str(i)) for i in range(ex["count"])]
        body = body.replace(ex["marker"], ex.get("separator", "").join(items), 1)
    data = body.encode("utf-8")
    pad = case.get("pad_to")
    if pad is not None:
        assert len(data) <= pad, f"pad_to {pad}: the body is {len(data)} bytes already"
        data += b" " * (pad - len(data))
    return data


def ids(cases: list[dict[str, Any]]) -> list[str]:
    """The cases' names, as pytest ids."""
    return [c["name"] for c in cases]
