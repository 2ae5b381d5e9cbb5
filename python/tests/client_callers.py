"""One interface over the three clients under test — httpx with
BindingTransport, httpx with AsyncBindingTransport (driven on an event
loop of its own thread), requests with FulcrumAdapter — so that each
protocol test runs against all three."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import requests
from client_servers import Net

from fulcrum_client import AsyncBindingTransport, BindingTransport, FulcrumAdapter


def chunks(data: bytes, size: int = 7) -> Iterator[bytes]:
    """data as a stream of chunks: a body without a known length."""
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def achunks(data: bytes, size: int = 7) -> AsyncIterator[bytes]:
    for c in chunks(data, size):
        yield c


class Caller:
    """Sends calls through one client; `streamed` sends the body as chunks
    (not replayable unless buffered). do() returns (status, text, headers)
    or raises the client's error."""

    name = ""
    transport: Any

    def do(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        *,
        streamed: bool = False,
        headers: dict[str, str] | None = None,
        timeout: float = 10,
    ) -> tuple[int, str, dict[str, str]]:
        raise NotImplementedError

    def binding(self, front_door: str) -> Any:
        return self.transport.binding(front_door)

    @property
    def client_id(self) -> str:
        return str(self.transport.client_id)

    def close(self) -> None:
        raise NotImplementedError


class SyncCaller(Caller):
    name = "sync"

    def __init__(self, **opts: Any) -> None:
        self.transport = BindingTransport(**opts)
        self.client = httpx.Client(transport=self.transport, timeout=10)

    def do(self, method, url, body=None, *, streamed=False, headers=None, timeout=10):  # type: ignore[no-untyped-def]
        content: Any = chunks(body) if streamed and body is not None else body
        r = self.client.request(method, url, content=content, headers=headers, timeout=timeout)
        return r.status_code, r.text, dict(r.headers)

    def close(self) -> None:
        self.client.close()


class AsyncCaller(Caller):
    """AsyncBindingTransport on an event loop running in its own thread."""

    name = "async"

    def __init__(self, **opts: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.transport = AsyncBindingTransport(**opts)

        async def make() -> httpx.AsyncClient:
            return httpx.AsyncClient(transport=self.transport, timeout=10)

        self.client = self.run(make())

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def do(self, method, url, body=None, *, streamed=False, headers=None, timeout=10):  # type: ignore[no-untyped-def]
        async def call() -> tuple[int, str, dict[str, str]]:
            content: Any = achunks(body) if streamed and body is not None else body
            r = await self.client.request(method, url, content=content, headers=headers, timeout=timeout)
            return r.status_code, r.text, dict(r.headers)

        return self.run(call())

    def close(self) -> None:
        self.run(self.client.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


class RequestsCaller(Caller):
    name = "requests"

    def __init__(self, **opts: Any) -> None:
        self.transport = FulcrumAdapter(**opts)
        self.session = requests.Session()
        self.session.mount("http://", self.transport)
        self.session.mount("https://", self.transport)

    def do(self, method, url, body=None, *, streamed=False, headers=None, timeout=10):  # type: ignore[no-untyped-def]
        data: Any = chunks(body) if streamed and body is not None else body
        r = self.session.request(method, url, data=data, headers=headers, timeout=timeout, allow_redirects=False)
        return r.status_code, r.text, dict(r.headers)

    def close(self) -> None:
        self.session.close()


CALLERS = {"sync": SyncCaller, "async": AsyncCaller, "requests": RequestsCaller}


@pytest.fixture
def net() -> Iterator[Net]:
    n = Net()
    yield n
    n.close()


@pytest.fixture(params=sorted(CALLERS))
def make(request: pytest.FixtureRequest) -> Iterator[type[Caller]]:
    """A client class; every client made through it is closed at the end."""
    made: list[Caller] = []
    cls = CALLERS[request.param]

    def factory(**opts):  # type: ignore[no-untyped-def]
        c = cls(**opts)
        made.append(c)
        return c

    yield factory  # type: ignore[misc]
    for c in made:
        c.close()


def errors_of(c: Caller) -> tuple[type[BaseException], ...]:
    return (requests.RequestException,) if c.name == "requests" else (httpx.HTTPError,)
