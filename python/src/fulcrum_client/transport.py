"""httpx transports that follow fulcrum's HTTP binding protocol
(DESIGN.md "HTTP binding protocol"), as the Go client package does.

Send every call to the group's front door URL. The first is answered by the
front door with a 307 to the chosen replica; the transport keeps that
binding and sends later calls straight to the replica, with
``Fulcrum-Binding: <group>/<replica-id>`` and a stable random
``Fulcrum-Client`` id. A replica's 307 with ``Fulcrum-Rebind: 1`` drops the
binding and the call goes through the front door again. A failure to
connect to the replica, or its 503, drops the binding too.

No call runs twice: a call is sent again only when it provably did not run
(the replica or front door could not be connected to, the replica sent the
client back instead of running it, or the front door answered its own
503), or to a replicated group that deduplicates it. Below the binding
protocol, as Go's net/http does, a request net/http counts as replayable
(GET, HEAD, OPTIONS, TRACE, or an Idempotency-Key or X-Idempotency-Key
header; a body that can be sent again) that fails on a reused keep-alive
connection before any byte of an answer is sent once more on a new
connection (:func:`fulcrum_client._binding.send_again_on_new_connection`;
the reuse is seen in httpcore's trace events, so an inner transport other
than httpx's own never does this). The rules are those of
:func:`fulcrum_client._binding.run_call`, shared by both transports and the
requests adapter.

Example::

    import httpx
    from fulcrum_client import BindingTransport

    with httpx.Client(transport=BindingTransport(), timeout=10) as client:
        for n in range(100):
            client.get(f"http://127.0.0.1:8000/prime/{n}").raise_for_status()
"""

from __future__ import annotations

import logging
import ssl
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import httpx

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

__all__ = ["AsyncBindingTransport", "Binding", "BindingTransport"]

log = logging.getLogger("fulcrum_client")


def failure_kind(e: httpx.TransportError) -> str:
    """How far an httpx transport error proves the request got: NOT_SENT
    when the connection could not be made (refused, unreachable, no such
    host, connect timeout; not a TLS handshake failure, which Go does not
    count either), EXPIRED for the caller's own read, write and pool
    timeouts, SENT for anything else."""
    if isinstance(e, httpx.ConnectTimeout):
        return NOT_SENT
    if isinstance(e, httpx.ConnectError):
        cause: BaseException | None = e
        while cause is not None:
            if isinstance(cause, ssl.SSLError):
                return SENT
            cause = cause.__cause__ or cause.__context__
        return NOT_SENT
    if isinstance(e, httpx.TimeoutException):
        return EXPIRED
    return SENT


def _answer(resp: httpx.Response) -> Answer:
    def header(name: str) -> str | None:
        values = resp.headers.get_list(name)
        return values[0] if values else None

    return Answer(status=resp.status_code, header=header)


def _call(request: httpx.Request, replayable: bool) -> Call:
    return Call(
        method=request.method,
        url=str(request.url),
        has_header=request.headers.__contains__,
        replayable=replayable,
    )


def _headers(request: httpx.Request, send: Send) -> httpx.Headers:
    h = request.headers.copy()
    for name in send.del_headers:
        if name in h:
            del h[name]
    for name, value in send.set_headers:
        h[name] = value
    if send.rewritten:
        h["Host"] = send.host
    return h


def _attempt_request(
    request: httpx.Request, url: httpx.URL | str, headers: httpx.Headers, stream: Any, watch: _Watch | None
) -> httpx.Request:
    """The request of one attempt: request's method and extensions with
    url, headers and stream, and watch, when given, as its trace extension
    (it passes every event on to the caller's own). Made without
    httpx.Request's constructor (which would parse the URL and headers
    again): its public attributes are all a transport reads."""
    out = httpx.Request.__new__(httpx.Request)
    out.method = request.method
    out.url = url if isinstance(url, httpx.URL) else httpx.URL(url)
    out.headers = headers
    out.stream = stream
    out.extensions = request.extensions if watch is None else {**request.extensions, "trace": watch}
    return out


# --- which connection an attempt used ------------------------------------------

_CONNECT_EVENTS = frozenset({"connection.connect_tcp.started", "connection.connect_unix_socket.started"})
_SENT_EVENT = "http11.send_request_headers.started"
_HEAD_FAILED_EVENT = "http11.receive_response_headers.failed"
_NO_RESPONSE = "Server disconnected without sending a response"
"""httpcore's error when the server closed the connection before any byte
of an answer."""


class _Watch:
    """What one attempt's httpcore trace events (httpx's "trace" request
    extension) tell of its connection: whether the attempt opened one
    (connect events), whether it sent its request on an HTTP/1.1
    connection, whether reading the answer's head failed. An inner
    transport that sends no events (not httpcore's) shows no reused
    connection. Not safe for concurrent use: one per attempt."""

    __slots__ = ("connected", "sent", "head_failed", "_user")

    def __init__(self, user: Any) -> None:
        self.connected = self.sent = self.head_failed = False
        self._user = user

    def _note(self, name: str) -> None:
        if name in _CONNECT_EVENTS:
            self.connected = True
        elif name == _SENT_EVENT:
            self.sent = True
        elif name == _HEAD_FAILED_EVENT:
            self.head_failed = True

    @property
    def reused(self) -> bool:
        """The request went on a pooled keep-alive connection."""
        return self.sent and not self.connected

    def no_answer(self, e: httpx.TransportError) -> bool:
        """Whether e is the connection failing before any byte of an answer:
        reading the answer's head failed with a reset, or with the server's
        close (httpcore's "without sending a response")."""
        if not self.head_failed:
            return False
        if isinstance(e, httpx.ReadError):
            return True
        return isinstance(e, httpx.RemoteProtocolError) and _NO_RESPONSE in str(e)


class _SyncWatch(_Watch):
    __slots__ = ()

    def __call__(self, name: str, info: dict[str, Any]) -> None:
        self._note(name)
        if self._user is not None:
            self._user(name, info)


class _AsyncWatch(_Watch):
    __slots__ = ()

    async def __call__(self, name: str, info: dict[str, Any]) -> None:
        self._note(name)
        if self._user is not None:
            await self._user(name, info)


def _log_again(request: httpx.Request, e: BaseException) -> None:
    log.debug("fulcrum: %s %s failed on a reused connection before any answer; sending it again: %s", request.method, request.url.host, e)


def _fast_urls() -> bool:
    """Whether httpx keeps a URL's parts in a named tuple, _uri_reference,
    as httpx 0.23 to 0.28 do: then a bound call's URL is made from the
    request's parsed URL and the replica's (about 2 µs) rather than parsed
    from text (about 35 µs, a tenth of a loopback call)."""
    try:
        ref = httpx.URL("http://a:1/p?q")._uri_reference
        base = httpx.URL("http://b:2/x")._uri_reference
        out = httpx.URL.__new__(httpx.URL)
        out._uri_reference = ref._replace(scheme=base.scheme, userinfo=base.userinfo, host=base.host, port=base.port, path=base.path + ref.path)
        return str(out) == "http://b:2/x/p?q"
    except Exception:  # noqa: BLE001 - any other httpx: the slow path
        return False


_FAST_URLS = _fast_urls()


class _URLs:
    """Makes the URL of each attempt. Safe for concurrent use (a dict
    read, or a store of an immutable value)."""

    def __init__(self) -> None:
        self._bases: weakref.WeakKeyDictionary[Binding, Any] = weakref.WeakKeyDictionary()

    def of(self, request: httpx.Request, send: Send) -> httpx.URL | str:
        if not send.rewritten:
            return request.url
        b = send.binding
        if b is None or not _FAST_URLS:
            return send.url
        base = self._bases.get(b)
        if base is None:
            base = httpx.URL(b.url)._uri_reference
            self._bases[b] = base
        ref = request.url._uri_reference
        out = httpx.URL.__new__(httpx.URL)
        out._uri_reference = ref._replace(
            scheme=base.scheme, userinfo=base.userinfo, host=base.host, port=base.port, path=base.path + ref.path
        )
        return out


def _too_many(e: TooManyHopsError, request: httpx.Request) -> httpx.TooManyRedirects:
    return httpx.TooManyRedirects(str(e), request=request)


class _Common:
    """What both transports share: their state and its accessors."""

    _state: BindingState
    _urls: _URLs

    def _init_state(
        self,
        front_doors: Sequence[str],
        client_id: str | None,
        max_hops: int,
        max_buffered_body: int,
        replicated: bool,
    ) -> None:
        self._state = BindingState(
            client_id=client_id,
            front_doors=front_doors,
            max_hops=max_hops,
            max_buffered_body=max_buffered_body,
            replicated=replicated,
        )
        self._urls = _URLs()

    @property
    def client_id(self) -> str:
        """The id sent as Fulcrum-Client; fixed for the transport's life."""
        return self._state.client_id

    def binding(self, front_door: str) -> Binding | None:
        """The current binding of the front door at front_door (a URL with
        its scheme and host), or None when there is none."""
        key = self._state.canonical(door_key(front_door))
        return self._state.binding(key)

    def unbind(self, front_door: str) -> None:
        """Drop the binding of the front door at front_door: the next call
        goes through the front door again."""
        self._state.unbind(self._state.canonical(door_key(front_door)))


_DOC_ARGS = """
    front_doors: one group's front doors on several balancer instances, as
        base URLs ("http://10.0.0.1:8000"). A call to any of them is a call
        to the group: one binding for all, and a call that must go through
        a front door moves to the next only when it provably did not run
        there (each once per call). Default none: a call goes to the front
        door its URL names. An entry that is not an http(s) base URL is a
        ValueError naming it.
    client_id: the stable id sent as Fulcrum-Client, 1 to 128 visible ASCII
        characters. Default a random one (128 bits, base32).
    max_hops: bounds the redirects followed and retries made for one call
        (default 4); beyond it the call fails with httpx.TooManyRedirects
        and did not run.
    max_buffered_body: the largest streamed request body kept in memory so
        that it can follow a redirect (default 1 MiB; negative: never).
        Bodies given as bytes are always replayed. A larger streamed body
        is sent once: a redirect it meets is returned to the caller.
    replicated: the front doors are a replicated group's bridges from the
        first call (default: learned from the first answer carrying
        Fulcrum-Position). Set it only for a transport that calls
        replicated groups alone.
    transport: the inner transport that sends the requests. Default an
        httpx.HTTPTransport made with transport_options (verify, cert,
        http2, limits, proxy, ...).
"""


class BindingTransport(httpx.BaseTransport, _Common):
    __doc__ = (
        """An httpx transport that speaks fulcrum's binding protocol (module
    doc). Safe for concurrent use by threads, as httpx.Client is.
"""
        + _DOC_ARGS
    )

    def __init__(
        self,
        front_doors: Sequence[str] = (),
        *,
        client_id: str | None = None,
        max_hops: int = DEFAULT_MAX_HOPS,
        max_buffered_body: int = DEFAULT_MAX_BUFFERED_BODY,
        replicated: bool = False,
        transport: httpx.BaseTransport | None = None,
        **transport_options: Any,
    ) -> None:
        self._init_state(front_doors, client_id, max_hops, max_buffered_body, replicated)
        if transport is not None and transport_options:
            raise ValueError(
                f"fulcrum_client: transport_options {sorted(transport_options)}: only without transport"
            )
        self._inner = transport if transport is not None else httpx.HTTPTransport(**transport_options)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = _SyncBody(request, self._state.max_body)
        call = _call(request, body.replayable)
        again = replayable_on_new_connection(call)
        user_trace = request.extensions.get("trace")
        gen = run_call(self._state, call)
        last: httpx.Response | None = None
        result: Any = None
        try:
            op = next(gen)
            while True:
                if isinstance(op, Send):
                    last = None
                    while True:
                        # Watched only when it could be sent again: httpcore's
                        # tracing costs about 14 µs a call (3% of a bare
                        # loopback call).
                        watch = _SyncWatch(user_trace) if again else None
                        out = _attempt_request(request, self._urls.of(request, op), _headers(request, op), body.next(), watch)
                        try:
                            last = self._inner.handle_request(out)
                            result = _answer(last)
                        except httpx.TransportError as e:
                            if watch is not None and send_again_on_new_connection(again, watch.reused, watch.no_answer(e)):
                                _log_again(out, e)
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
            raise _too_many(e, request) from None

    def close(self) -> None:
        self._inner.close()


class AsyncBindingTransport(httpx.AsyncBaseTransport, _Common):
    __doc__ = (
        """An httpx async transport that speaks fulcrum's binding protocol
    (module doc), with the same decisions as BindingTransport. Safe for
    concurrent use by tasks (and threads).
"""
        + _DOC_ARGS.replace("httpx.HTTPTransport", "httpx.AsyncHTTPTransport")
    )

    def __init__(
        self,
        front_doors: Sequence[str] = (),
        *,
        client_id: str | None = None,
        max_hops: int = DEFAULT_MAX_HOPS,
        max_buffered_body: int = DEFAULT_MAX_BUFFERED_BODY,
        replicated: bool = False,
        transport: httpx.AsyncBaseTransport | None = None,
        **transport_options: Any,
    ) -> None:
        self._init_state(front_doors, client_id, max_hops, max_buffered_body, replicated)
        if transport is not None and transport_options:
            raise ValueError(
                f"fulcrum_client: transport_options {sorted(transport_options)}: only without transport"
            )
        self._inner = transport if transport is not None else httpx.AsyncHTTPTransport(**transport_options)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = _AsyncBody(request, self._state.max_body)
        await body.prepare()
        call = _call(request, body.replayable)
        again = replayable_on_new_connection(call)
        user_trace = request.extensions.get("trace")
        gen = run_call(self._state, call)
        last: httpx.Response | None = None
        result: Any = None
        try:
            op = next(gen)
            while True:
                if isinstance(op, Send):
                    last = None
                    while True:
                        awatch = _AsyncWatch(user_trace) if again else None  # as in BindingTransport
                        out = _attempt_request(request, self._urls.of(request, op), _headers(request, op), body.next(), awatch)
                        try:
                            last = await self._inner.handle_async_request(out)
                            result = _answer(last)
                        except httpx.TransportError as e:
                            if awatch is not None and send_again_on_new_connection(again, awatch.reused, awatch.no_answer(e)):
                                _log_again(out, e)
                                continue
                            result = Failure(e, failure_kind(e))
                        break
                elif isinstance(op, Peek):
                    assert last is not None
                    result = await _apeek(last, op.limit)
                elif isinstance(op, ReadWhole):
                    assert last is not None
                    result = await _aread_whole(last, op)
                elif isinstance(op, Discard):
                    assert last is not None
                    await _adiscard(last)
                    last, result = None, None
                op = gen.send(result)
        except StopIteration:
            assert last is not None
            return last
        except TooManyHopsError as e:
            raise _too_many(e, request) from None

    async def aclose(self) -> None:
        await self._inner.aclose()


# --- request bodies ------------------------------------------------------------


def _declared_length(request: httpx.Request) -> int | None:
    try:
        return int(request.headers["Content-Length"])
    except (KeyError, ValueError):
        return None


class _OnceStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body that can be sent once: chunks already read, then the rest."""

    def __init__(self, head: list[bytes], rest: Any) -> None:
        self._head, self._rest = head, rest

    def __iter__(self) -> Iterator[bytes]:
        yield from self._head
        yield from self._rest

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._head:
            yield chunk
        async for chunk in self._rest:
            yield chunk


class _SyncBody:
    """Hands out a request's body for each attempt of one call. It is
    replayable when given as bytes (read), or streamed and no longer than
    the limit (then buffered here); a longer one is streamed once. Not safe
    for concurrent use."""

    def __init__(self, request: httpx.Request, limit: int) -> None:
        self._data: bytes | None = None
        self._once: httpx.SyncByteStream | None = None
        try:
            self._data = request.content
            return
        except httpx.RequestNotRead:
            pass
        declared = _declared_length(request)
        stream = request.stream
        assert isinstance(stream, httpx.SyncByteStream), "a sync transport needs a sync request body"
        if limit < 0 or (declared is not None and declared > limit):
            self._once = stream
            return
        head: list[bytes] = []
        size = 0
        it = iter(stream)
        for chunk in it:
            head.append(chunk)
            size += len(chunk)
            if size > limit:
                self._once = _OnceStream(head, it)
                return
        self._data = b"".join(head)

    @property
    def replayable(self) -> bool:
        return self._data is not None

    def next(self) -> httpx.SyncByteStream:
        if self._data is not None:
            return httpx.ByteStream(self._data)
        once, self._once = self._once, None
        assert once is not None, "a streamed body was sent twice"
        return once


class _AsyncBody:
    """_SyncBody for async request bodies; prepare() before use."""

    def __init__(self, request: httpx.Request, limit: int) -> None:
        self._request, self._limit = request, limit
        self._data: bytes | None = None
        self._once: httpx.AsyncByteStream | None = None

    async def prepare(self) -> None:
        request, limit = self._request, self._limit
        try:
            self._data = request.content
            return
        except httpx.RequestNotRead:
            pass
        declared = _declared_length(request)
        stream = request.stream
        assert isinstance(stream, httpx.AsyncByteStream), "an async transport needs an async request body"
        if limit < 0 or (declared is not None and declared > limit):
            self._once = stream
            return
        head: list[bytes] = []
        size = 0
        it = stream.__aiter__()
        async for chunk in it:
            head.append(chunk)
            size += len(chunk)
            if size > limit:
                self._once = _OnceStream(head, it)
                return
        self._data = b"".join(head)

    @property
    def replayable(self) -> bool:
        return self._data is not None

    def next(self) -> httpx.AsyncByteStream:
        if self._data is not None:
            return httpx.ByteStream(self._data)
        once, self._once = self._once, None
        assert once is not None, "a streamed body was sent twice"
        return once


# --- answers' bodies -------------------------------------------------------------


class _Peeked(httpx.SyncByteStream, httpx.AsyncByteStream):
    """An answer's body whose first chunks were read and put back."""

    def __init__(self, head: list[bytes], rest: Any, orig: Any) -> None:
        self._head, self._rest, self._orig = head, rest, orig

    def __iter__(self) -> Iterator[bytes]:
        yield from self._head
        if self._rest is not None:
            yield from self._rest

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._head:
            yield chunk
        if self._rest is not None:
            async for chunk in self._rest:
                yield chunk

    def close(self) -> None:
        self._orig.close()

    async def aclose(self) -> None:
        await self._orig.aclose()


def _peek(resp: httpx.Response, limit: int) -> bytes | None:
    orig = resp.stream
    assert isinstance(orig, httpx.SyncByteStream)
    head: list[bytes] = []
    size = 0
    it = iter(orig)
    failed = False
    try:
        for chunk in it:
            head.append(chunk)
            size += len(chunk)
            if size >= limit:
                break
        else:
            it = iter(())
    except httpx.TransportError:
        failed = True
        it = iter(())
    resp.stream = _Peeked(head, it, orig)
    return None if failed else b"".join(head)[:limit]


async def _apeek(resp: httpx.Response, limit: int) -> bytes | None:
    orig = resp.stream
    assert isinstance(orig, httpx.AsyncByteStream)
    head: list[bytes] = []
    size = 0
    it: Any = orig.__aiter__()
    failed = False
    try:
        async for chunk in it:
            head.append(chunk)
            size += len(chunk)
            if size >= limit:
                break
        else:
            it = None
    except httpx.TransportError:
        failed = True
        it = None
    resp.stream = _Peeked(head, it, orig)
    return None if failed else b"".join(head)[:limit]


def _cut(op: ReadWhole, size: int, e: httpx.TransportError) -> Failure:
    err = httpx.ReadError(f"fulcrum_client: reply from {op.host} cut short after {size} bytes: {e}")
    err.__cause__ = e
    return Failure(err, SENT)


def _read_whole(resp: httpx.Response, op: ReadWhole) -> Failure | None:
    orig = resp.stream
    assert isinstance(orig, httpx.SyncByteStream)
    head: list[bytes] = []
    size = 0
    it = iter(orig)
    try:
        for chunk in it:
            head.append(chunk)
            size += len(chunk)
            if size > op.limit:
                resp.stream = _Peeked(head, it, orig)
                return None
    except httpx.TransportError as e:
        orig.close()
        return _cut(op, size, e)
    orig.close()
    resp.stream = httpx.ByteStream(b"".join(head))
    return None


async def _aread_whole(resp: httpx.Response, op: ReadWhole) -> Failure | None:
    orig = resp.stream
    assert isinstance(orig, httpx.AsyncByteStream)
    head: list[bytes] = []
    size = 0
    it = orig.__aiter__()
    try:
        async for chunk in it:
            head.append(chunk)
            size += len(chunk)
            if size > op.limit:
                resp.stream = _Peeked(head, it, orig)
                return None
    except httpx.TransportError as e:
        await orig.aclose()
        return _cut(op, size, e)
    await orig.aclose()
    resp.stream = httpx.ByteStream(b"".join(head))
    return None


def _discard(resp: httpx.Response) -> None:
    stream = resp.stream
    assert isinstance(stream, httpx.SyncByteStream)
    size = 0
    try:
        for chunk in stream:
            size += len(chunk)
            if size >= DISCARD_LIMIT:
                break
    except httpx.TransportError:
        pass
    finally:
        stream.close()


async def _adiscard(resp: httpx.Response) -> None:
    stream = resp.stream
    assert isinstance(stream, httpx.AsyncByteStream)
    size = 0
    try:
        async for chunk in stream:
            size += len(chunk)
            if size >= DISCARD_LIMIT:
                break
    except httpx.TransportError:
        pass
    finally:
        await stream.aclose()
