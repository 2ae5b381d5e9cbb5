"""A requests transport adapter that follows fulcrum's HTTP binding
protocol with the same decisions as the httpx transports
(:func:`fulcrum_client._binding.run_call`).

Needs the ``requests`` extra: ``pip install 'fulcrum-client[requests]'``.

Example::

    import requests
    from fulcrum_client import FulcrumAdapter

    session = requests.Session()
    session.mount("http://", FulcrumAdapter())
    session.get("http://127.0.0.1:8000/prime/7", timeout=10)

Leave ``max_retries`` at its default (0): urllib3's own read retries could
send a call again after it ran (they know neither which connection was
reused nor Idempotency-Key, and they retry read timeouts), which the
adapter never does. In their place the adapter follows Go's net/http: a
request net/http counts as replayable (GET, HEAD, OPTIONS, TRACE, or an
Idempotency-Key or X-Idempotency-Key header; a body that can be sent
again) that fails on a reused keep-alive connection before any byte of an
answer is sent once more on a new connection
(:func:`fulcrum_client._binding.send_again_on_new_connection`). The
adapter's connection pools note whether the connection urllib3 took for an
attempt was already open (urllib3 closes a pooled connection the server
closed while idle before using it, as net/http does).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

try:
    import requests
    import urllib3
    from requests.adapters import HTTPAdapter
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
except ImportError as e:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "fulcrum_client.FulcrumAdapter needs requests: pip install 'fulcrum-client[requests]'"
    ) from e

from fulcrum_client._binding import (
    DEFAULT_MAX_BUFFERED_BODY,
    DEFAULT_MAX_HOPS,
    DISCARD_LIMIT,
    EXPIRED,
    NOT_SENT,
    SENT,
    Answer,
    Binding,
    BindingState,
    Call,
    Discard,
    Failure,
    Peek,
    ReadWhole,
    Send,
    TooManyHopsError,
    door_key,
    replayable_on_new_connection,
    run_call,
    send_again_on_new_connection,
)

__all__ = ["Binding", "FulcrumAdapter"]

log = logging.getLogger("fulcrum_client")

_CHUNK = 16 << 10

# --- which connection an attempt used ------------------------------------------

_taken = threading.local()
"""reused: whether the connection the last attempt of this thread took
from a watched pool was already open (a pooled keep-alive connection)."""


class _WatchedPool(HTTPConnectionPool):
    """An HTTPConnectionPool that notes, for the calling thread, whether the
    connection it hands out is already open. urllib3 closes a pooled
    connection the server dropped before handing it out, so an open one is
    a reused keep-alive connection."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        _taken.reused = getattr(conn, "sock", None) is not None
        return conn


class _WatchedHTTPSPool(HTTPSConnectionPool):
    """_WatchedPool for https."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        _taken.reused = getattr(conn, "sock", None) is not None
        return conn


_WATCHED_POOLS = {"http": _WatchedPool, "https": _WatchedHTTPSPool}


def _no_answer(e: requests.RequestException) -> bool:
    """Whether e is the connection failing before any byte of an answer:
    urllib3's "Connection aborted." with an OS error that is no timeout
    (the server closed the connection, http.client's RemoteDisconnected, or
    reset it). urllib3 ignores a reset or closed connection while writing
    and reads, so this is the reading of the answer's head failing."""
    if not isinstance(e, requests.exceptions.ConnectionError) or isinstance(e, requests.exceptions.ConnectTimeout):
        return False
    reason = e.args[0] if e.args else None
    if not isinstance(reason, urllib3.exceptions.ProtocolError) or len(reason.args) < 2:
        return False
    cause = reason.args[1]
    return isinstance(cause, OSError) and not isinstance(cause, TimeoutError)


def failure_kind(e: requests.RequestException) -> str:
    """How far a requests error proves the request got: NOT_SENT when the
    connection could not be made (refused, unreachable, no such host,
    connect timeout), EXPIRED for a read timeout, SENT for anything else
    (a TLS handshake failure included, as in Go)."""
    if isinstance(e, requests.exceptions.ConnectTimeout):
        return NOT_SENT
    if isinstance(e, requests.exceptions.SSLError):
        return SENT
    if isinstance(e, requests.exceptions.ConnectionError):
        reason = e.args[0] if e.args else None
        if isinstance(reason, urllib3.exceptions.MaxRetryError):
            reason = reason.reason
        if isinstance(reason, urllib3.exceptions.NewConnectionError):
            return NOT_SENT
        return SENT
    if isinstance(e, requests.exceptions.Timeout):
        return EXPIRED
    return SENT


class FulcrumAdapter(HTTPAdapter):
    """A requests adapter that speaks fulcrum's binding protocol. Mount it
    for "http://" (and "https://") on a Session. Safe for concurrent use,
    as HTTPAdapter is.

    front_doors, client_id, max_hops, max_buffered_body and replicated are
    as for BindingTransport (a body given as bytes or str is always
    replayed; a file or generator is buffered up to max_buffered_body);
    adapter_options go to HTTPAdapter (pool_connections, pool_maxsize, ...).
    Too many redirects and retries raise requests.TooManyRedirects.
    """

    def __init__(
        self,
        front_doors: Sequence[str] = (),
        *,
        client_id: str | None = None,
        max_hops: int = DEFAULT_MAX_HOPS,
        max_buffered_body: int = DEFAULT_MAX_BUFFERED_BODY,
        replicated: bool = False,
        **adapter_options: Any,
    ) -> None:
        self._state = BindingState(
            client_id=client_id,
            front_doors=front_doors,
            max_hops=max_hops,
            max_buffered_body=max_buffered_body,
            replicated=replicated,
        )
        super().__init__(**adapter_options)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        """HTTPAdapter's pool manager, with pools that note connection reuse."""
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        """HTTPAdapter's proxy manager, with pools that note connection reuse."""
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _WATCHED_POOLS
        return manager

    @property
    def client_id(self) -> str:
        """The id sent as Fulcrum-Client; fixed for the adapter's life."""
        return self._state.client_id

    def binding(self, front_door: str) -> Binding | None:
        """The current binding of the front door at front_door, or None."""
        return self._state.binding(self._state.canonical(door_key(front_door)))

    def unbind(self, front_door: str) -> None:
        """Drop the binding of the front door at front_door."""
        self._state.unbind(self._state.canonical(door_key(front_door)))

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> requests.Response:
        body = _Body(request, self._state.max_body)
        assert request.url is not None and request.method is not None
        call = Call(
            method=request.method,
            url=request.url,
            has_header=request.headers.__contains__,
            replayable=body.replayable,
        )
        again = replayable_on_new_connection(call)
        gen = run_call(self._state, call)
        last: requests.Response | None = None
        result: Any = None
        try:
            op = next(gen)
            while True:
                if isinstance(op, Send):
                    last = None
                    out = request.copy()
                    out.url = op.url
                    for name in op.del_headers:
                        out.headers.pop(name, None)
                    for name, value in op.set_headers:
                        out.headers[name] = value
                    if op.rewritten:
                        out.headers.pop("Host", None)
                    while True:
                        out.body = body.next()
                        _taken.reused = False
                        try:
                            last = super().send(out, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
                            result = _answer(last)
                        except requests.RequestException as e:
                            if send_again_on_new_connection(again, _taken.reused, _no_answer(e)):
                                log.debug("fulcrum: %s %s failed on a reused connection before any answer; sending it again: %s", out.method, op.url, e)
                                continue
                            result = Failure(e, failure_kind(e))
                        break
                elif isinstance(op, Peek):
                    assert last is not None
                    result = _peek(last, op.limit)
                elif isinstance(op, ReadWhole):
                    assert last is not None
                    result = _read_whole(last, op)
                elif isinstance(op, Discard):
                    assert last is not None
                    _discard(last)
                    last, result = None, None
                op = gen.send(result)
        except StopIteration:
            assert last is not None
            return last
        except TooManyHopsError as e:
            raise requests.exceptions.TooManyRedirects(str(e), request=request) from None


def _answer(resp: requests.Response) -> Answer:
    raw_headers = getattr(resp.raw, "headers", None)

    def header(name: str) -> str | None:
        if raw_headers is not None and hasattr(raw_headers, "getlist"):
            values = raw_headers.getlist(name)
            return values[0] if values else None
        return resp.headers.get(name)

    return Answer(status=resp.status_code, header=header)


class _Body:
    """Hands out a request's body for each attempt of one call: bytes and
    str are replayed; a file or an iterable is buffered when it is no
    longer than the limit, else sent once. Not safe for concurrent use."""

    def __init__(self, request: requests.PreparedRequest, limit: int) -> None:
        self._data: Any = None
        self._once: Any = None
        self.replayable = True
        b = request.body
        if b is None or isinstance(b, (bytes, bytearray, memoryview, str)):
            self._data = b
            return
        try:
            declared = int(request.headers.get("Content-Length", ""))
        except ValueError:
            declared = None
        if limit < 0 or (declared is not None and declared > limit):
            self._once, self.replayable = b, False
            return
        head: list[Any] = []
        size = 0
        if hasattr(b, "read"):
            chunk = b.read(limit + 1)
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8")
            if len(chunk) <= limit:
                self._data = chunk
                return
            self._once, self.replayable = _chain([chunk], iter(lambda: b.read(_CHUNK), b"" if isinstance(chunk, bytes) else "")), False
            return
        it = iter(b)
        for piece in it:
            head.append(piece)
            size += len(piece)
            if size > limit:
                self._once, self.replayable = _chain(head, it), False
                return
        self._data = b"".join(p.encode("utf-8") if isinstance(p, str) else p for p in head)

    def next(self) -> Any:
        if self.replayable:
            return self._data
        once, self._once = self._once, None
        assert once is not None, "a streamed body was sent twice"
        return once


def _chain(head: list[Any], rest: Iterator[Any]) -> Iterator[Any]:
    yield from head
    yield from rest


class _PeekedRaw:
    """An answer's urllib3 body whose first chunks were read and put back;
    anything else is the original's."""

    def __init__(self, head: list[bytes], rest: Iterator[bytes], orig: Any) -> None:
        self._it = _chain(head, rest)
        self._orig = orig
        self._buf = b""

    def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
        if self._buf:
            buf, self._buf = self._buf, b""
            yield buf
        yield from self._it

    def read(self, amt: int | None = None, decode_content: bool | None = None, **_: Any) -> bytes:
        while amt is None or len(self._buf) < amt:
            chunk = next(self._it, None)
            if chunk is None:
                break
            self._buf += chunk
        if amt is None:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:amt], self._buf[amt:]
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._orig, name)


def _chunks(resp: requests.Response) -> Iterator[bytes]:
    return iter(resp.raw.stream(_CHUNK, decode_content=True))


def _put_back(resp: requests.Response, head: list[bytes], rest: Iterator[bytes] | None) -> None:
    if rest is None:
        resp._content = b"".join(head)  # the whole body: read, as Response.content does
        resp._content_consumed = True
    else:
        resp.raw = _PeekedRaw(head, rest, resp.raw)


def _peek(resp: requests.Response, limit: int) -> bytes | None:
    head: list[bytes] = []
    size = 0
    it = _chunks(resp)
    try:
        for chunk in it:
            head.append(chunk)
            size += len(chunk)
            if size >= limit:
                _put_back(resp, head, it)
                return b"".join(head)[:limit]
    except (urllib3.exceptions.HTTPError, OSError):
        _put_back(resp, head, None)
        return None
    _put_back(resp, head, None)
    return b"".join(head)


def _read_whole(resp: requests.Response, op: ReadWhole) -> Failure | None:
    head: list[bytes] = []
    size = 0
    it = _chunks(resp)
    try:
        for chunk in it:
            head.append(chunk)
            size += len(chunk)
            if size > op.limit:
                _put_back(resp, head, it)
                return None
    except (urllib3.exceptions.HTTPError, OSError) as e:
        resp.close()
        err = requests.exceptions.ChunkedEncodingError(
            f"fulcrum_client: reply from {op.host} cut short after {size} bytes: {e}", request=resp.request
        )
        err.__cause__ = e
        return Failure(err, SENT)
    _put_back(resp, head, None)
    return None


def _discard(resp: requests.Response) -> None:
    """Drains up to DISCARD_LIMIT bytes and closes resp; a body read to its
    end gives its connection back to the pool."""
    size = 0
    try:
        if not resp._content_consumed:
            for chunk in _chunks(resp):
                size += len(chunk)
                if size >= DISCARD_LIMIT:
                    break
            else:
                resp._content_consumed = True  # drained: close() releases the connection
    except (urllib3.exceptions.HTTPError, OSError):
        pass
    finally:
        resp.close()
