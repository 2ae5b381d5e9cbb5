"""The load driver of `fulcrum bench python`: one closed-loop caller (one
thread, one kept-alive connection per arm) that runs segments of calls on
the bench's command.

    driver.py --warmup N [--cpu 0] --arm NAME=URL ... --bound NAME=URL ...

An --arm calls URL with a plain httpx.Client; a --bound arm calls URL (a
group's front door) with an httpx.Client over fulcrum_client's
BindingTransport, so that after the first call it is bound to a replica and
calls it directly. Both kinds use one httpx.HTTPTransport with the same
limits (same pooling). At start every arm makes N unmeasured calls (which
opens its connection and, for a bound arm, binds it), then the driver
prints one JSON line

    {"ready": true, "bindings": {"NAME": "<bound replica URL>"}}

and reads commands from standard input, one a line:

    run NAME N   N calls of arm NAME; answers one JSON line
                 {"arm", "calls", "errors", "first_error", "elapsed_s",
                  "mean_us", "p50_us", "p99_us", "binding"}
                 (binding: a bound arm's replica URL after the segment)
    quit         exits (so does the end of input)

A bad command is answered {"error": "..."}. The cyclic garbage collector is
off during a segment (collected before it), so that a collection of the
driver's own garbage does not land in one arm's segment more than
another's.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

import httpx

from fulcrum_client.transport import BindingTransport

TIMEOUT = 60.0


class Arm:
    """One configuration's client: its URL and its httpx.Client."""

    def __init__(self, name: str, url: str, bound: bool) -> None:
        self.name, self.url, self.bound = name, url, bound
        limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
        inner = httpx.HTTPTransport(limits=limits)
        self.transport: BindingTransport | None = None
        if bound:
            self.transport = BindingTransport(transport=inner)
            self.client = httpx.Client(transport=self.transport, timeout=TIMEOUT)
        else:
            self.client = httpx.Client(transport=inner, timeout=TIMEOUT)

    def binding(self) -> str | None:
        """The bound replica's URL (a bound arm), else None."""
        if self.transport is None:
            return None
        b = self.transport.binding(self.url)
        return b.url if b is not None else None

    def run(self, n: int) -> dict[str, object]:
        """n calls one after another; their figures."""
        lat: list[int] = []
        errors = 0
        first = ""
        get = self.client.get
        url = self.url
        clock = time.perf_counter_ns
        gc.collect()
        gc.disable()
        try:
            start = clock()
            for _ in range(n):
                t0 = clock()
                try:
                    r = get(url)
                    ok = r.status_code == 200
                    if not ok and not first:
                        first = f"status {r.status_code}"
                except httpx.HTTPError as e:
                    ok = False
                    if not first:
                        first = f"{type(e).__name__}: {e}"
                t1 = clock()
                if ok:
                    lat.append(t1 - t0)
                else:
                    errors += 1
            elapsed = clock() - start
        finally:
            gc.enable()
        lat.sort()
        out: dict[str, object] = {
            "arm": self.name, "calls": len(lat), "errors": errors, "first_error": first,
            "elapsed_s": elapsed / 1e9, "mean_us": 0.0, "p50_us": 0.0, "p99_us": 0.0, "binding": self.binding(),
        }
        if lat:
            out["mean_us"] = sum(lat) / len(lat) / 1e3
            out["p50_us"] = lat[len(lat) // 2] / 1e3
            out["p99_us"] = lat[min(len(lat) - 1, (len(lat) * 99) // 100)] / 1e3
        return out


def parse_arm(value: str) -> tuple[str, str]:
    name, sep, url = value.partition("=")
    if not sep or not name or not url.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"{value!r}: want NAME=http://...")
    return name, url


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--warmup", type=int, default=100, help="unmeasured calls per arm at start")
    p.add_argument("--cpu", type=int, default=-1, help="the CPU to run on (default: any)")
    p.add_argument("--arm", type=parse_arm, action="append", default=[], help="NAME=URL called plainly")
    p.add_argument("--bound", type=parse_arm, action="append", default=[], help="NAME=URL of a front door, called bound")
    a = p.parse_args(argv)
    if a.warmup < 1:
        p.error(f"--warmup {a.warmup}: must be ≥ 1 (the warm-up binds the bound arms)")
    if a.cpu >= 0:
        os.sched_setaffinity(0, {a.cpu})
    arms: dict[str, Arm] = {}
    for (name, url), bound in [(x, False) for x in a.arm] + [(x, True) for x in a.bound]:
        if name in arms:
            p.error(f"arm {name!r} given twice")
        arms[name] = Arm(name, url, bound)
    for arm in arms.values():
        res = arm.run(a.warmup)
        if res["errors"]:
            print(json.dumps({"error": f"warm-up of {arm.name}: {res['errors']} failed calls, first: {res['first_error']}"}), flush=True)
            return 1
        if arm.bound and arm.binding() is None:
            print(json.dumps({"error": f"warm-up of {arm.name}: not bound after {a.warmup} calls"}), flush=True)
            return 1
    bindings = {n: arm.binding() for n, arm in arms.items() if arm.bound}
    print(json.dumps({"ready": True, "bindings": bindings}), flush=True)
    for line in sys.stdin:
        words = line.split()
        if words == ["quit"]:
            break
        if len(words) != 3 or words[0] != "run" or words[1] not in arms or not words[2].isdigit() or int(words[2]) < 1:
            print(json.dumps({"error": f"command {line.strip()!r}: want \"run ARM N\" with ARM one of {sorted(arms)} and N ≥ 1, or \"quit\""}), flush=True)
            continue
        print(json.dumps(arms[words[1]].run(int(words[2]))), flush=True)
    for arm in arms.values():
        arm.client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
