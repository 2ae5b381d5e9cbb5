"""The replica of `fulcrum bench python`: a Starlette app under uvicorn
(one worker, one process) whose GET /work spends --work-us microseconds of
the thread's CPU time per call, optionally wrapped in fulcrum_client's
ASGIMonitor registered to a balancer's group.

    replica.py --work-us 100 [--cpu 1] [--balancer URL --group NAME]

It listens on a free loopback port and prints "listening on <base URL>" as
its first line of standard output; GET /healthz answers 200 (the group's
health checks). Shipped inside the fulcrum binary and written out by the
bench; not an example of how to deploy the monitor (docs/python.md is).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route


def burn(ns: int) -> None:
    """Spins until this thread has used ns nanoseconds of CPU time: the
    same CPU work per call whatever else the machine runs."""
    end = time.thread_time_ns() + ns
    while time.thread_time_ns() < end:
        pass


def build_app(work_ns: int) -> Starlette:
    """The Starlette app: GET /work burns work_ns of CPU and answers
    "ok"; GET /healthz answers "ok" at once."""

    async def work(request: Request) -> Response:
        burn(work_ns)
        return PlainTextResponse("ok")

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/work", work), Route("/healthz", healthz)])


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work-us", type=float, default=100.0, help="CPU time per call in microseconds (default 100)")
    p.add_argument("--cpu", type=int, default=-1, help="the CPU to run on (default: any)")
    p.add_argument("--balancer", default="", help="admin API URL: wrap the app in ASGIMonitor registered there")
    p.add_argument("--group", default="", help="the group to register in (with --balancer)")
    a = p.parse_args(argv)
    if a.work_us < 0:
        p.error(f"--work-us {a.work_us}: must be ≥ 0")
    if bool(a.balancer) != bool(a.group):
        p.error("--balancer and --group go together")
    if a.cpu >= 0:
        os.sched_setaffinity(0, {a.cpu})
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit TCP_NODELAY. uvicorn serving a socket
    # it is given leaves Nagle on, and the response's second write then
    # waits for the client's delayed ACK: 40 ms per kept-alive call.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app: Any = build_app(int(a.work_us * 1000))
    if a.balancer:
        from fulcrum_client.asgi import ASGIMonitor

        app = ASGIMonitor(app, balancer=a.balancer, group=a.group, address=url)
    # Kept-alive connections stay open for the whole run (uvicorn's default
    # closes them after 5 s idle, which an arm waiting for its turn in a
    # round can exceed: the close then races the arm's next call).
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", workers=1, timeout_keep_alive=3600)
    print(f"listening on {url}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
