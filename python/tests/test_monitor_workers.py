"""Worker slots of multi-process replicas: claimed by flock in a shared
directory, freed when the holder exits (even by kill -9); and the
monitor's options, checked with errors naming them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fulcrum_client._workers import NoFreeSlotError, claim_slot, slot_dir, workers_from_env
from fulcrum_client.monitor import Monitor, MonitorError


def test_slots_are_claimed_once_each(tmp_path: Path) -> None:
    a, b = claim_slot(tmp_path, 2), claim_slot(tmp_path, 2)
    assert (a.index, b.index) == (0, 1)
    with pytest.raises(NoFreeSlotError, match="all 2 worker slots"):
        claim_slot(tmp_path, 2)
    b.release()
    c = claim_slot(tmp_path, 2)
    assert c.index == 1
    a.release()
    c.release()


def test_a_killed_holder_frees_its_slot(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from fulcrum_client._workers import claim_slot;"
         f"s = claim_slot(Path({str(tmp_path)!r}), 2); print(s.index, flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "0"
        mine = claim_slot(tmp_path, 2)
        assert mine.index == 1
        with pytest.raises(NoFreeSlotError):
            claim_slot(tmp_path, 2)
    finally:
        holder.kill()
        holder.wait()
    assert claim_slot(tmp_path, 2).index == 0
    mine.release()


def test_worker_counts_are_checked() -> None:
    assert workers_from_env({}) == 1
    assert workers_from_env({"WEB_CONCURRENCY": "4"}) == 4
    for bad in ("x", "0", "2000"):
        with pytest.raises(ValueError, match="WEB_CONCURRENCY"):
            workers_from_env({"WEB_CONCURRENCY": bad})
    with pytest.raises(ValueError, match="workers 0"):
        claim_slot(Path("/nonexistent"), 0)
    assert slot_dir("g", "http://a:1") == slot_dir("g", "http://a:1") != slot_dir("g", "http://a:2")


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"group": "g", "address": "http://a:1"}, "balancer"),
        ({"balancer": "ftp://x", "group": "g", "address": "http://a:1"}, "balancer"),
        ({"balancer": "http://x"}, "group and address"),
        ({"balancer": "http://x", "group": "g", "address": "http://a:1?q"}, "address"),
        ({"balancer": "http://x", "group": "g", "address": "http://a:1", "load": "bytes"}, "load"),
        ({"balancer": "http://x", "group": "g", "address": "http://a:1", "worker": (2, 2)}, "worker"),
        ({"balancer": "http://x", "group": "g", "address": "http://a:1", "workers": 0}, "workers"),
        ({"balancer": "http://x", "group": "g", "address": "http://a:1", "interval": 0}, "interval"),
        ({"balancer": "http://x", "group": "g", "address": "http://a:1", "top_clients": 5000}, "top_clients"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, object], field: str) -> None:
    with pytest.raises(MonitorError, match=f"monitor: {field}"):
        Monitor(**options)  # type: ignore[arg-type]
