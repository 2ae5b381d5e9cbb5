"""The prime service as a Starlette app under fulcrum_client's ASGIMonitor
(run by uvicorn: `uvicorn apps.prime_asgi:app`)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from apps import settings
from apps.prime import answer
from fulcrum_client.asgi import ASGIMonitor


async def prime(request: Request) -> Response:
    # The work runs on the event loop: a CPU-bound call holds it, as a
    # CPU-bound handler does.
    status, body = answer(request.path_params["n"], settings.ADDRESS)
    return JSONResponse(body, status_code=status)


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


app = ASGIMonitor(
    Starlette(routes=[Route("/prime/{n}", prime), Route("/healthz", healthz)]),
    balancer=settings.BALANCER,
    group=settings.GROUP,
    address=settings.ADDRESS,
)
