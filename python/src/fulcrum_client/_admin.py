"""The monitor's conversations with the balancer's admin API, written once
as generators that yield httpx.Request objects and are sent the
httpx.Response (or thrown the httpx.HTTPError) for each, and yield Wait to
pause; a driver runs them with a blocking httpx.Client and a
threading.Event (threads) or an httpx.AsyncClient and an asyncio.Event
(asyncio). The flows decide; the drivers do the I/O and the waiting.

Rules (the Go monitor's, monitor/register.go, report.go, route.go): the
admin URLs are tried from the one reported to now, in order; a request that
cannot reach an instance, or that an instance answers 5xx, goes to the next;
a 4xx is the balancer's answer and is not tried elsewhere. A 307/308 from
/v1/report is followed by the monitor itself, with its token, at most three
times, and the instance that takes the report becomes the one reported to.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, urljoin, urlsplit

import httpx

from fulcrum_client.wire import Advisory, decode_advisory, decode_registration_answer
from fulcrum_client._monitor_core import Registration

REPORT_PATH = "/v1/report"
MAX_REPORT_REDIRECTS = 3

T = TypeVar("T")


@dataclass(frozen=True)
class Wait:
    """A flow's step asking its driver to wait seconds, unless the monitor
    is stopping; the flow is sent True when it is (and then returns)."""

    seconds: float


# A flow yields requests (sent the response, or thrown the httpx.HTTPError)
# and waits (sent whether the monitor is stopping).
Flow = Generator["httpx.Request | Wait", Any, T]


class APIError(Exception):
    """An error answer of the balancer's admin API."""

    def __init__(self, status: int, code: str = "", message: str = "", field: str = "", registering: bool = False):
        self.status, self.code, self.message, self.field = status, code, message, field
        self.registering = registering
        text = f"monitor: balancer answered {status}"
        if code:
            text += f": {code}"
        if message:
            text += f": {message}"
        if field:
            text += f" (field {field})"
        super().__init__(text)

    @property
    def refusal(self) -> bool:
        """A registration refused as such (401: no or a wrong join token;
        403: the address is blocked): trying again will not change it."""
        return self.registering and self.status in (401, 403)


class DecodeError(Exception):
    """An answer the monitor could not decode (not tried elsewhere)."""


class NoAdminError(Exception):
    """No admin URL took the request (each error is in errors)."""

    def __init__(self, what: str, errors: list[Exception]):
        self.errors = errors
        super().__init__(f"monitor: {what}: no admin URL took it: " + "; ".join(str(e) for e in errors))


def api_error(resp: httpx.Response, registering: bool = False) -> APIError:
    """An APIError from an error answer, with its error object if any."""
    code = message = field = ""
    try:
        body = json.loads(resp.content)
        err = body.get("error", {}) if isinstance(body, dict) else {}
        if isinstance(err, dict):
            code, message, field = (str(err.get(k, "")) for k in ("code", "message", "field"))
    except ValueError:
        pass
    return APIError(resp.status_code, code, message, field, registering)


def redirect_base(base: str, location: str) -> str:
    """The admin base URL a 307 from base + /v1/report points to. A Location
    that is not an http(s) URL of /v1/report is a ValueError."""
    if not location:
        raise ValueError("redirect without a Location")
    to = urlsplit(urljoin(base + REPORT_PATH, location))
    if to.scheme not in ("http", "https") or not to.netloc or not to.path.endswith(REPORT_PATH) or to.query or to.fragment:
        raise ValueError(f"redirect to {location!r}: not an http(s) URL of {REPORT_PATH}")
    return f"{to.scheme}://{to.netloc}{to.path[: -len(REPORT_PATH)]}".rstrip("/")


class AdminRoute:
    """The admin URLs given and the one reported to now (an entry of the
    list, or where a 307 sent the monitor). Not safe for concurrent use;
    the monitor's flows run one at a time per driver."""

    def __init__(self, admins: list[str]) -> None:
        self.list = list(admins)
        self.current = admins[0] if admins else ""

    def order(self) -> list[str]:
        """The URLs to try for one request: the current one first, then the
        list after it (wrapping round)."""
        if self.current in self.list:
            i = self.list.index(self.current)
            return self.list[i:] + self.list[:i]
        return ([self.current] if self.current else []) + self.list


def _try_elsewhere(err: Exception) -> bool:
    if isinstance(err, APIError):
        return err.status >= 500
    return not isinstance(err, DecodeError)


def register_flow(
    route: AdminRoute, group: str, body: dict[str, Any], join_token: str
) -> Flow[Registration]:
    """POST /v1/groups/{group}/replicas; returns the registration."""
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if join_token:
        headers["Authorization"] = f"Bearer {join_token}"
    errors: list[Exception] = []
    for base in route.order():
        url = f"{base}/v1/groups/{quote(group, safe='')}/replicas"
        try:
            resp = yield httpx.Request("POST", url, content=data, headers=headers)
            if resp.status_code not in (200, 201):
                raise api_error(resp, registering=True)
            reg = _decode_registered(resp)
        except (httpx.HTTPError, APIError) as e:
            err = e if isinstance(e, APIError) else ConnectionError(f"monitor: register at {base}: {e}")
            if not _try_elsewhere(err):
                raise err from None
            errors.append(err)
            continue
        route.current = base
        return reg
    if len(errors) == 1:
        raise errors[0]
    raise NoAdminError("register", errors)


def _decode_registered(resp: httpx.Response) -> Registration:
    try:
        reg = decode_registration_answer(resp.content)
    except ValueError as e:
        raise DecodeError(f"monitor: register: decode answer: {e}") from None
    return Registration(id=reg.id, token=reg.token, front_door=reg.front_door, report_interval=reg.report_interval)


def report_flow(route: AdminRoute, token: str, data: bytes) -> Flow[Advisory]:
    """POSTs an encoded report; returns the advisory answered."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    errors: list[Exception] = []
    hops = 0
    for start in route.order():
        base = start
        while True:
            try:
                resp = yield httpx.Request("POST", base + REPORT_PATH, content=data, headers=headers)
            except httpx.HTTPError as e:
                errors.append(ConnectionError(f"monitor: report to {base}: {e}"))
                break
            if resp.status_code in (307, 308):
                if hops >= MAX_REPORT_REDIRECTS:
                    errors.append(ConnectionError(f"monitor: report to {base}: more than {MAX_REPORT_REDIRECTS} redirects"))
                    break
                try:
                    base = redirect_base(base, resp.headers.get("Location", ""))
                except ValueError as e:
                    errors.append(ConnectionError(f"monitor: report to {base}: {e}"))
                    break
                hops += 1
                continue
            if resp.status_code != 200:
                err = api_error(resp)
                if not _try_elsewhere(err):
                    raise err
                errors.append(err)
                break
            try:
                adv = decode_advisory(resp.content)
            except ValueError as e:
                raise DecodeError(f"monitor: report: decode advisory: {e}") from None
            route.current = base
            return adv
    if len(errors) == 1:
        raise errors[0]
    raise NoAdminError("report", errors)


def deregister_flow(route: AdminRoute, group: str, reg: Registration) -> Flow[None]:
    """DELETE the replica with its own token; a 404 counts as done."""
    headers = {"Authorization": f"Bearer {reg.token}"}
    errors: list[Exception] = []
    for base in route.order():
        url = f"{base}/v1/groups/{quote(group, safe='')}/replicas/{quote(reg.id, safe='')}"
        try:
            resp = yield httpx.Request("DELETE", url, headers=headers)
        except httpx.HTTPError as e:
            errors.append(ConnectionError(f"monitor: deregister {reg.id}: {e}"))
            continue
        if resp.status_code == 404 or resp.status_code // 100 == 2:
            return None
        err = api_error(resp)
        if not _try_elsewhere(err):
            raise err
        errors.append(err)
    if len(errors) == 1:
        raise errors[0]
    raise NoAdminError("deregister", errors)


def drive(client: httpx.Client, flow: Flow[T], wait: Callable[[float], bool] | None = None) -> T:
    """Runs a flow with a blocking client; wait(seconds) waits and says
    whether the monitor is stopping."""
    try:
        req = next(flow)
        while True:
            if isinstance(req, Wait):
                assert wait is not None, "a flow that waits needs a wait"
                req = flow.send(wait(req.seconds))
                continue
            try:
                resp = client.send(req)
                resp.read()
                resp.close()
            except httpx.HTTPError as e:
                req = flow.throw(e)
                continue
            req = flow.send(resp)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def adrive(
    client: httpx.AsyncClient, flow: Flow[T], wait: Callable[[float], Awaitable[bool]] | None = None
) -> T:
    """Runs a flow with an asyncio client; await wait(seconds) waits and
    says whether the monitor is stopping."""
    try:
        req = next(flow)
        while True:
            if isinstance(req, Wait):
                assert wait is not None, "a flow that waits needs a wait"
                req = flow.send(await wait(req.seconds))
                continue
            try:
                resp = await client.send(req)
                await resp.aread()
                await resp.aclose()
            except httpx.HTTPError as e:
                req = flow.throw(e)
                continue
            req = flow.send(resp)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]

