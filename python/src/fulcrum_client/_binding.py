"""The binding protocol's decisions (DESIGN.md "HTTP binding protocol"),
shared by every transport of this package so that they cannot drift.

No I/O here. One call is a generator, :func:`run_call`, that yields the
operations it needs done (:class:`Send` an attempt, :class:`Peek` at or
:class:`ReadWhole` the last answer's body, :class:`Discard` it) and is sent
their results; it returns when the last answer is the call's answer, and
raises when the call fails. The transports (httpx sync and async, requests)
only carry these operations out. The decisions transcribe the Go client's
``Transport.roundTrip`` (client/transport.go) rule for rule.

:class:`BindingState` is what outlives a call: the bindings, the front door
sets, the groups learned to be replicated. It is safe for concurrent use
from threads and from asyncio tasks (its lock is never held across a
yield).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import secrets
import threading
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Union
from urllib.parse import SplitResult, urljoin, urlsplit

from fulcrum_client.protocol import (
    HEADER_BINDING,
    HEADER_CLIENT,
    HEADER_GROUP,
    HEADER_IDEMPOTENCY_KEY,
    HEADER_POSITION,
    HEADER_REBIND,
    HEADER_REPLICA,
    HEADER_SEQUENCE,
    HEADER_SESSION,
    MAX_CLIENT_ID_LENGTH,
    REBIND_UNREACHABLE,
)

log = logging.getLogger("fulcrum_client")

DEFAULT_MAX_HOPS = 4
"""How many redirects and retries one call may take (Go DefaultMaxHops)."""

DEFAULT_MAX_BUFFERED_BODY = 1 << 20
"""The largest streamed request body kept in memory so that it can follow a
redirect (Go DefaultMaxBufferedBody)."""

MAX_ERROR_PEEK = 4 << 10
"""What is read of a front door's 503 body to tell whose it is."""

DISCARD_LIMIT = 64 << 10
"""What is drained of an answer that is not returned before it is closed."""

FRONT_DOOR_CODES = ("no_replica", "overloaded")
"""Error codes of a fulcrum front door's own 503."""

NOT_SENT = "not_sent"
"""A failure that proves the request never left (the connection could not
be made)."""
SENT = "sent"
"""A failure after the request may have reached the server."""
EXPIRED = "expired"
"""The caller's own time bound ran out (Go: the context is done): returned
as is, nothing is decided from it."""

DoorKey = tuple[str, str]
"""A front door as the caller names it: (scheme, host[:port]), lowercase,
without the scheme's default port."""

HeaderGetter = Callable[[str], Union[str, None]]
"""Returns the first value of a header (case-insensitive name), or None."""


class TooManyHopsError(Exception):
    """A call was redirected or retried more than max_hops times. It did not
    run. The transports raise their library's too-many-redirects error
    with this message."""


# --- operations a call asks its transport to carry out -------------------


class Send(NamedTuple):
    """Send one attempt of the call: the request with ``url`` in place of
    its own and its headers changed by ``set_headers`` (replacing every
    value of each name) and ``del_headers``. When ``rewritten``, the URL's
    host is not the request's: a Host header must follow the URL (``host``).
    The transport sends ``Answer`` or ``Failure``."""

    url: str
    rewritten: bool
    host: str
    """The host[:port] of url, for the Host header when rewritten."""
    set_headers: tuple[tuple[str, str], ...]
    del_headers: tuple[str, ...]
    binding: Binding | None
    """The binding whose replica the attempt goes to; None: a front door."""

    @property
    def to_replica(self) -> bool:
        return self.binding is not None


@dataclass(frozen=True)
class Peek:
    """Read up to ``limit`` bytes of the last answer's body and put them
    back, so the answer can still be returned whole. The transport sends
    the bytes, or None when reading failed (what was read is put back)."""

    limit: int


@dataclass(frozen=True)
class ReadWhole:
    """Read the last answer's body to its end, keeping at most ``limit``
    bytes (the rest of a longer body stays to be streamed), so that an
    answer cut short is an error of the call. The transport sends None, or
    a ``Failure`` (kind SENT, the answer closed) naming ``host``."""

    limit: int
    host: str


@dataclass(frozen=True)
class Discard:
    """Drain up to DISCARD_LIMIT bytes of the last answer and close it. The
    transport sends None."""


Op = Union[Send, Peek, ReadWhole, Discard]


class Answer(NamedTuple):
    """An attempt's answer: its status and headers."""

    status: int
    header: HeaderGetter


class Failure(NamedTuple):
    """An attempt's failure: the transport's exception and its kind
    (NOT_SENT, SENT or EXPIRED)."""

    error: BaseException
    kind: str


# --- bindings --------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Binding:
    """A client's binding to a replica of a group. Compared by identity:
    dropping a binding drops that one only, not a newer equal one."""

    group: str
    """The group's name (Fulcrum-Group)."""
    replica: str
    """The bound replica's id (Fulcrum-Replica)."""
    url: str
    """The replica's base URL."""
    scheme: str = field(repr=False)
    host: str = field(repr=False)
    prefix: str = field(repr=False)
    """The replica's base path (escaped), without a trailing slash."""

    @property
    def header(self) -> str:
        """The Fulcrum-Binding value, ``<group>/<replica>``."""
        return f"{self.group}/{self.replica}"

    def rewrite(self, url: str) -> str:
        """url (absolute) pointed at the replica: same path (under the base
        path) and query."""
        return f"{self.scheme}://{self.host}{self.prefix}{_path_and_query(url)}"


_AFTER_AUTHORITY = re.compile(r"^[^:/?#]*://[^/?#]*([^#]*)")


def _path_and_query(url: str) -> str:
    """What follows an absolute URL's authority, without its fragment."""
    m = _AFTER_AUTHORITY.match(url)
    return m.group(1) if m else ""


def _escaped_path(u: SplitResult) -> str:
    return u.path or "/"


def binding_from(answer: Answer, request_url: str) -> Binding | None:
    """The binding a front door's 307 gives, for a request to request_url.
    It needs Fulcrum-Group, Fulcrum-Replica and a Location that is the
    replica's base URL followed by the request's path; None otherwise."""
    group = answer.header(HEADER_GROUP) or ""
    replica = answer.header(HEADER_REPLICA) or ""
    loc = answer.header("Location") or ""
    if not group or not replica or not loc:
        return None
    try:
        lu = urlsplit(urljoin(request_url, loc))
        ru = urlsplit(request_url)
    except ValueError:
        return None
    if lu.scheme not in ("http", "https") or not lu.netloc:
        return None
    path, lpath = _escaped_path(ru), _escaped_path(lu)
    if not lpath.endswith(path):
        return None
    prefix = lpath[: len(lpath) - len(path)].rstrip("/")
    return Binding(
        group=group,
        replica=replica,
        url=f"{lu.scheme}://{lu.netloc}{prefix}",
        scheme=lu.scheme,
        host=lu.netloc,
        prefix=prefix,
    )


_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def door_key(url: str) -> DoorKey:
    """The front door a URL names."""
    u = urlsplit(url)
    scheme, host = u.scheme.lower(), u.netloc.lower()
    default = _DEFAULT_PORTS.get(scheme)
    if default and host.endswith(default):
        host = host[: -len(default)]
    return scheme, host


def _with_door(url: str, key: DoorKey) -> str:
    return f"{key[0]}://{key[1]}{_path_and_query(url)}"


def parse_front_doors(urls: Iterable[str]) -> tuple[DoorKey, ...]:
    """The front doors of one group, in the order given, each once. Every
    entry must be an http(s) base URL with a host and no path beyond "/",
    query, fragment or user; ValueError names the first that is not."""
    keys: list[DoorKey] = []
    for i, s in enumerate(urls):
        ok = isinstance(s, str)
        if ok:
            try:
                u = urlsplit(s)
                ok = (
                    u.scheme in ("http", "https")
                    and bool(u.hostname)
                    and u.path in ("", "/")
                    and not u.query
                    and not u.fragment
                    and u.username is None
                )
                u.port  # noqa: B018 - raises ValueError on a bad port
            except ValueError:
                ok = False
        if not ok:
            raise ValueError(
                f"fulcrum_client: front_doors[{i}] {s!r}: must be a front door's base URL, http(s)://host:port"
            )
        k = door_key(s)
        if k not in keys:
            keys.append(k)
    return tuple(keys)


def new_client_id() -> str:
    """A random client id: 128 bits in base32, as Go's rand.Text."""
    return base64.b32encode(secrets.token_bytes(16)).decode("ascii").rstrip("=")


def check_client_id(client_id: str) -> str:
    """client_id if it can be sent as Fulcrum-Client: 1 to 128 visible
    ASCII characters; ValueError otherwise."""
    if (
        not isinstance(client_id, str)
        or not 0 < len(client_id) <= MAX_CLIENT_ID_LENGTH
        or not all("!" <= c <= "~" for c in client_id)
    ):
        raise ValueError(
            f"fulcrum_client: client_id {client_id!r}: must be 1 to {MAX_CLIENT_ID_LENGTH} visible ASCII characters"
        )
    return client_id


# --- what outlives a call -------------------------------------------------


class BindingState:
    """A transport's bindings and what it learned of its front doors. Safe
    for concurrent use (threads and tasks): every method takes the lock for
    a few dictionary operations and never blocks otherwise."""

    def __init__(
        self,
        *,
        client_id: str | None,
        front_doors: Sequence[str],
        max_hops: int,
        max_buffered_body: int,
        replicated: bool,
    ) -> None:
        if isinstance(front_doors, str):
            raise ValueError(
                f"fulcrum_client: front_doors {front_doors!r}: must be a list of base URLs, not one string"
            )
        if not isinstance(max_hops, int) or max_hops < 0:
            raise ValueError(f"fulcrum_client: max_hops {max_hops!r}: must be an int >= 0 (0: the default, 4)")
        if not isinstance(max_buffered_body, int):
            raise ValueError(
                f"fulcrum_client: max_buffered_body {max_buffered_body!r}: must be an int (0: the default, 1 MiB; negative: never buffer)"
            )
        self.client_id = new_client_id() if client_id is None else check_client_id(client_id)
        self.max_hops = max_hops or DEFAULT_MAX_HOPS
        self.max_body = DEFAULT_MAX_BUFFERED_BODY if max_buffered_body == 0 else max(max_buffered_body, -1)
        self.replicated = bool(replicated)
        keys = parse_front_doors(front_doors)
        # Each front door of the set maps to the set (its keys); keys[0]
        # keys the set's one binding.
        self._sets: dict[DoorKey, tuple[DoorKey, ...]] = {k: keys for k in keys}
        self._lock = threading.Lock()
        # Guarded by _lock:
        self._current: dict[tuple[DoorKey, ...], int] = {}
        self._known: set[DoorKey] = set()
        self._bindings: dict[DoorKey, Binding] = {}
        self._replicated: set[DoorKey] = set()
        self._seq = secrets.randbits(64)

    # Front door sets. Read-only after construction.

    def set_of(self, key: DoorKey) -> tuple[DoorKey, ...] | None:
        """The front doors of key's set, or None when key is in none."""
        return self._sets.get(key)

    def canonical(self, key: DoorKey) -> DoorKey:
        """The key the binding of front door key is kept under."""
        s = self._sets.get(key)
        return s[0] if s else key

    def current(self, doors: tuple[DoorKey, ...]) -> int:
        """The index in doors of the front door that last answered."""
        with self._lock:
            return self._current.get(doors, 0)

    def set_current(self, doors: tuple[DoorKey, ...], i: int) -> None:
        with self._lock:
            self._current[doors] = i

    # Bindings.

    def known(self, key: DoorKey) -> bool:
        """Whether the front door key has bound this client before (so it
        redirects and runs no call)."""
        with self._lock:
            return key in self._known

    def binding(self, key: DoorKey) -> Binding | None:
        with self._lock:
            return self._bindings.get(key)

    def bind(self, key: DoorKey, b: Binding) -> None:
        with self._lock:
            self._known.add(key)
            self._bindings[key] = b
            self._replicated.discard(key)  # it redirects: not (or no longer) replicated

    def drop(self, key: DoorKey, b: Binding) -> bool:
        """Forget b if it is still key's binding; whether it was."""
        with self._lock:
            if self._bindings.get(key) is b:
                del self._bindings[key]
                return True
            return False

    def unbind(self, key: DoorKey) -> None:
        with self._lock:
            self._bindings.pop(key, None)

    # Replicated groups.

    def learn_replicated(self, key: DoorKey) -> None:
        with self._lock:
            self._replicated.add(key)

    def known_replicated(self, key: DoorKey) -> bool:
        with self._lock:
            return key in self._replicated

    def take_sequence(self) -> int:
        """A fresh Fulcrum-Sequence: a counter from a random start, never 0."""
        with self._lock:
            while True:
                self._seq = (self._seq + 1) & ((1 << 64) - 1)
                if self._seq:
                    return self._seq


# --- one call ----------------------------------------------------------------


class Call(NamedTuple):
    """What the decisions need of a request: its method and URL, whether
    the caller set a header (has_header, case-insensitive name), and whether
    its body can be sent more than once (empty, bytes, or buffered)."""

    method: str
    url: str
    has_header: Callable[[str], bool]
    replayable: bool


REPLAYABLE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
"""The methods Go's net/http sends again on a new connection
(Request.isReplayable)."""

IDEMPOTENCY_HEADERS = (HEADER_IDEMPOTENCY_KEY, "X-Idempotency-Key")
"""Headers that make any method replayable for net/http
(Request.isReplayable)."""


def replayable_on_new_connection(call: Call) -> bool:
    """Whether Go's net/http would send call again on a new connection after
    a reused one failed (Request.isReplayable): its body can be sent again
    (empty, or re-creatable: Go's GetBody) and its method is GET, HEAD,
    OPTIONS or TRACE, or it carries an Idempotency-Key or X-Idempotency-Key
    header (any value)."""
    if not call.replayable:
        return False
    return call.method in REPLAYABLE_METHODS or any(call.has_header(h) for h in IDEMPOTENCY_HEADERS)


def send_again_on_new_connection(replayable: bool, reused: bool, no_answer: bool) -> bool:
    """Whether an attempt that failed is sent once more to the same
    destination, below the binding protocol, as Go's net/http Transport does
    (Transport.roundTrip, persistConn.shouldRetryRequest): the attempt went
    on a reused keep-alive connection (a fresh one the server hangs up on is
    no stale connection, and retrying it could loop), it failed before any
    byte of an answer was read (the server closed or reset the connection),
    and the call is replayable (:func:`replayable_on_new_connection`). The
    binding protocol sees only the last attempt's outcome. It is asked again
    after each failed attempt, as net/http loops: every such attempt retires
    one pooled connection, so the repeats are bounded by the pool.

    Not followed: net/http also resends a non-replayable method whose
    request it wrote no byte of; the Python HTTP libraries do not tell that
    apart (httpcore ignores a failed write and reads), and their check that
    an idle connection is still open before reusing it covers the usual
    case (the server closed it while idle)."""
    return replayable and reused and no_answer


def _identity(state: BindingState, call: Call) -> tuple[tuple[str, str], ...]:
    """The headers that name a call to a replicated group's bridge, among
    Fulcrum-Session (the client id) and a fresh Fulcrum-Sequence, that the
    caller did not set; none beside an Idempotency-Key."""
    if call.has_header(HEADER_IDEMPOTENCY_KEY):
        return ()
    out: list[tuple[str, str]] = []
    if not call.has_header(HEADER_SESSION):
        out.append((HEADER_SESSION, state.client_id))
    if not call.has_header(HEADER_SEQUENCE):
        out.append((HEADER_SEQUENCE, str(state.take_sequence())))
    return tuple(out)


def _attempt(
    state: BindingState,
    call: Call,
    bound: Binding | None,
    to: DoorKey | None,
    identity: tuple[tuple[str, str], ...],
    unreachable: str,
    leaving: str,
) -> Send:
    """One attempt: to bound's replica, or to the front door (to, when set,
    in place of the one the URL names) with the call's identity.
    unreachable is the binding the client could not connect to, leaving the
    one a replica sent it back from: the front door is told either."""
    url, rewritten, host = call.url, False, ""
    if bound is None and to is not None and to != door_key(call.url):
        url, rewritten, host = _with_door(call.url, to), True, to[1]
    sets: list[tuple[str, str]] = []
    dels: tuple[str, ...] = ()
    if bound is not None:
        url, rewritten, host = bound.rewrite(call.url), True, bound.host
        sets.append((HEADER_BINDING, bound.header))
    elif unreachable:
        sets += [(HEADER_BINDING, unreachable), (HEADER_REBIND, REBIND_UNREACHABLE)]
    elif leaving:
        sets += [(HEADER_BINDING, leaving), (HEADER_REBIND, "1")]
    else:
        dels = (HEADER_BINDING,)
    if bound is None:
        sets += identity
    sets.append((HEADER_CLIENT, state.client_id))
    return Send(url=url, rewritten=rewritten, host=host, set_headers=tuple(sets), del_headers=dels, binding=bound)


def is_rebind(a: Answer) -> bool:
    """Whether a is a replica sending the client back."""
    return a.status == 307 and a.header(HEADER_REBIND) == "1"


def own_unavailable(a: Answer, peek: bytes | None) -> bool:
    """Whether a, a 503 from a front door whose body starts with peek, is the
    front door's own — fulcrum's JSON error with a front door's code,
    naming the group Fulcrum-Group names — rather than a replica's that a
    per-request front door passed on."""
    if a.status != 503 or peek is None:
        return False
    group = a.header(HEADER_GROUP) or ""
    try:
        body = json.loads(peek)
    except ValueError:
        return False
    err = body.get("error") if isinstance(body, dict) else None
    if err is None:
        err = {}
    if not isinstance(err, dict):
        return False
    code, name = err.get("code", ""), err.get("group", "")
    if not isinstance(code, str) or not isinstance(name, str) or name != group:
        return False
    return code in FRONT_DOOR_CODES


def is_ordered(a: Answer) -> bool:
    """Whether a is a replicated group's answer to an ordered call."""
    return bool(a.header(HEADER_POSITION))


def retry_later(a: Answer) -> bool:
    """Whether a is a replicated front door's 503 with Retry-After."""
    return a.status == 503 and bool(a.header("Retry-After"))


CallGen = Generator[Op, Union[Answer, Failure, bytes, None], None]


def run_call(state: BindingState, call: Call) -> CallGen:
    """The decisions of one call (Go Transport.roundTrip), as a generator
    of operations (module doc). It returns when the last answer is the
    call's; it raises the failure's error, or TooManyHopsError.

    - a front door's 307 with Fulcrum-Group and Fulcrum-Replica binds the
      client and the call goes on to the replica;
    - a replica's 307 with Fulcrum-Rebind: 1 drops the binding and the call
      goes back through the front door (telling it the binding it leaves);
    - a failure to connect to the replica (NOT_SENT) drops the binding and
      the call goes back through the front door (with Fulcrum-Rebind:
      unreachable); any other failure drops the binding and is raised;
    - a 503 from the replica drops the binding and is returned;
    - a 503 from a front door that has bound this client before and that
      names the group in Fulcrum-Group is retried once;
    - with several front doors, a call the front door provably did not run
      (not sent; its own 503; any failure once a front door of the group
      has bound this client) goes to the next, each once per call;
    - to a replicated group, a call that failed after it was sent, or got
      a 503 with Retry-After, goes unchanged to the next front door (a
      lone one gets a second try after a failure).

    A call is sent again only when it provably did not run, or to a
    replicated group that deduplicates it. Only a replayable call follows a
    redirect: otherwise the redirect is returned.
    """
    key = door_key(call.url)
    doors = state.set_of(key)
    via = 0  # the index in doors of the front door a call goes to
    tried = 1  # the front doors of the set tried in this call
    if doors is not None:
        key = doors[0]
        via = state.current(doors)
    known = state.known(key)
    bound = state.binding(key) if known else None
    retried503 = False
    unreachable = ""
    leaving = ""
    identity: tuple[tuple[str, str], ...] | None = None
    hop = 0
    while True:
        if hop > state.max_hops:
            raise TooManyHopsError(
                f"fulcrum_client: too many redirects and retries: {state.max_hops} for {call.method} {_redacted(call.url)}"
            )
        hop += 1
        to = doors[via] if doors is not None and bound is None else None
        if bound is None and identity is None:
            identity = _identity(state, call)
        send = _attempt(state, call, bound, to, identity or (), unreachable, leaving)
        result = yield send

        if bound is not None:  # the replica answered, or failed to
            if isinstance(result, Failure):
                if result.kind == EXPIRED:
                    raise result.error
                state.drop(key, bound)
                if result.kind != NOT_SENT or not call.replayable:
                    log.debug("fulcrum: call to bound replica %s/%s failed; binding dropped: %s", bound.group, bound.replica, result.error)
                    raise result.error
                log.debug("fulcrum: bound replica %s/%s unreachable; rebinding through the front door", bound.group, bound.replica)
                unreachable, bound = bound.header, None
                continue
            assert isinstance(result, Answer)
            if is_rebind(result):
                state.drop(key, bound)
                log.debug("fulcrum: replica %s/%s sent the client back; rebinding", bound.group, bound.replica)
                if not call.replayable:
                    return
                yield Discard()
                leaving, bound = bound.header, None
                continue
            if result.status == 503:
                state.drop(key, bound)
                log.debug("fulcrum: replica %s/%s unavailable; binding dropped", bound.group, bound.replica)
            return

        # The front door answered (or a host not known as one).
        err = result if isinstance(result, Failure) else None
        answer = result if isinstance(result, Answer) else None
        repl = state.replicated
        if answer is not None and is_ordered(answer):
            state.learn_replicated(key)
            repl = True
        elif not repl:
            repl = state.known_replicated(key)
        if repl and answer is not None and state.max_body >= 0 and answer.status != 101:
            # A reply cut short is a failure, to be sent again.
            cut = yield ReadWhole(limit=state.max_body, host=urlsplit(send.url).netloc)
            if isinstance(cut, Failure):
                err, answer = cut, None
        ndoors = len(doors) if doors is not None else 1
        again = False
        if not call.replayable or (err is not None and err.kind == EXPIRED):
            pass
        elif doors is not None and tried < ndoors and (
            (err is not None and (err.kind == NOT_SENT or known))
            or (answer is not None and answer.status == 503 and own_unavailable(answer, (yield Peek(MAX_ERROR_PEEK))))  # type: ignore[arg-type]
        ):
            # Provably not run: not sent, refused by the front door itself,
            # or lost by a front door that redirects.
            again = True
        elif repl and err is not None:
            # A replicated group deduplicates the call sent again
            # unchanged. A lone front door gets a second try.
            again = tried < max(ndoors, 2)
        elif repl and answer is not None:
            again = tried < ndoors and retry_later(answer)
        if again:
            if answer is not None:
                yield Discard()
            log.debug("fulcrum: front door %s unavailable; trying the next (replicated: %s)", urlsplit(send.url).netloc, repl)
            if doors is not None:
                via = (via + 1) % len(doors)
            tried += 1
            hop -= 1  # front doors tried are bounded by the set, not max_hops
            continue
        if err is not None:
            raise err.error
        assert answer is not None
        if doors is not None:
            state.set_current(doors, via)
        if answer.status == 307:
            nb = binding_from(answer, send.url)
            if nb is None:
                return  # not a binding redirect
            known = True
            state.bind(key, nb)
            log.debug("fulcrum: bound to %s/%s at %s", nb.group, nb.replica, nb.url)
            if not call.replayable:
                return
            yield Discard()
            bound = nb
            continue
        if answer.status == 503 and known and not retried503 and call.replayable and answer.header(HEADER_GROUP):
            retried503 = True
            yield Discard()
            continue
        return


def _redacted(url: str) -> str:
    u = urlsplit(url)
    if u.password is None:
        return url
    netloc = u.netloc.replace(":" + u.password + "@", ":xxxxx@", 1)
    return SplitResult(u.scheme, netloc, u.path, u.query, u.fragment).geturl()
