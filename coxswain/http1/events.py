"""The event vocabulary of the HTTP/1.1 codec, shared by both implementations (RFC 9112).

Both directions speak it: a server-side :class:`~coxswain.http1.parser.RequestParser`
yields :class:`RequestHead`, a client-side ``ResponseParser`` yields :class:`ResponseHead`, and
then both yield body :class:`Data` pieces and one :class:`EndOfMessage` per message.

Rules:

- Header names are lower-cased bytes; values are bytes with surrounding OWS removed (RFC 9112
  §5, RFC 9110 §5.5). Order and duplicates are kept as received.
- A :class:`ProtocolError` is terminal for the connection: it carries the status the proxy
  should answer (400 malformed or smuggling, 431 head over the limit, 413 declared or streamed
  body over the limit, 501 CONNECT or an unknown method; 502 for any malformed *response*) and a
  reason sentence for logs. After it, the parser returns the same error forever.
- ``NEED_DATA``, ``PAUSED`` and ``CONNECTION_CLOSED`` are singletons compared with ``is``.
- Heads are not frozen: nobody changes an event after the parser made it, but a frozen
  dataclass of a head's fields takes several times as long to construct, and the proxy
  makes two heads per request (docs/benchmarks.md, "Measurements behind the design").
- The events a message makes for every request write their ``__init__`` out: mypyc compiles
  a written one, while the one ``dataclass`` generates stays interpreted (about ten times
  slower to call from the compiled codec); ``dataclass`` keeps it and adds the rest.

Pure values only: nothing here parses or performs I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "CONNECTION_CLOSED",
    "END_OF_MESSAGE",
    "NEED_DATA",
    "PAUSED",
    "ConnectionClosed",
    "Data",
    "EndOfMessage",
    "Event",
    "Headers",
    "NeedData",
    "Paused",
    "ProtocolError",
    "RequestHead",
    "ResponseHead",
]

Headers = tuple[tuple[bytes, bytes], ...]
"""(lower-cased name, value) pairs in wire order."""


@dataclass(slots=True, kw_only=True)  # not frozen: see "Heads are not frozen" above
class RequestHead:
    """A request line plus header section (RFC 9112 §3, §5).

    ``content_length`` is the declared body size, ``chunked`` says the body is chunked; with
    neither the request has no body (RFC 9112 §6.3 rule 6). ``expect_continue`` is true when the
    client sent ``Expect: 100-continue`` (RFC 9110 §10.1.1) and waits for a 100 before the body.
    ``upgrade`` is the ``Upgrade`` value when ``Connection: upgrade`` asks to switch protocols
    (RFC 9110 §7.8); after this request's EndOfMessage the parser pauses. ``host`` is the one
    ``Host`` value, None when the request has none (HTTP/1.0 only). ``connection`` holds the
    ``Connection`` options, lower-cased: the hop-by-hop fields a proxy removes (RFC 9110
    §7.6.1).
    """

    method: bytes
    target: bytes
    http_version: bytes
    headers: Headers
    host: bytes | None
    connection: tuple[bytes, ...]
    keep_alive: bool
    content_length: int | None
    chunked: bool
    expect_continue: bool
    upgrade: bytes | None

    def __init__(  # see "written out" above
        self,
        *,
        method: bytes,
        target: bytes,
        http_version: bytes,
        headers: Headers,
        host: bytes | None,
        connection: tuple[bytes, ...],
        keep_alive: bool,
        content_length: int | None,
        chunked: bool,
        expect_continue: bool,
        upgrade: bytes | None,
    ) -> None:
        self.method = method
        self.target = target
        self.http_version = http_version
        self.headers = headers
        self.host = host
        self.connection = connection
        self.keep_alive = keep_alive
        self.content_length = content_length
        self.chunked = chunked
        self.expect_continue = expect_continue
        self.upgrade = upgrade


@dataclass(slots=True, kw_only=True)  # not frozen: see "Heads are not frozen" above
class ResponseHead:
    """A status line plus header section (RFC 9112 §4, §5).

    A status below 200 other than 101 is informational: no body and no EndOfMessage follow it,
    and the final response comes next. ``has_body`` is false for 1xx, 204, 304 and responses to
    HEAD (RFC 9112 §6.3 rules 1-2); otherwise the body is chunked, sized, or (with neither) runs
    until the connection closes (rule 8). ``connection`` as for :class:`RequestHead`.
    """

    status: int
    reason: bytes
    http_version: bytes
    headers: Headers
    connection: tuple[bytes, ...]
    keep_alive: bool
    content_length: int | None
    chunked: bool
    has_body: bool

    def __init__(  # see "written out" above
        self,
        *,
        status: int,
        reason: bytes,
        http_version: bytes,
        headers: Headers,
        connection: tuple[bytes, ...],
        keep_alive: bool,
        content_length: int | None,
        chunked: bool,
        has_body: bool,
    ) -> None:
        self.status = status
        self.reason = reason
        self.http_version = http_version
        self.headers = headers
        self.connection = connection
        self.keep_alive = keep_alive
        self.content_length = content_length
        self.chunked = chunked
        self.has_body = has_body


@dataclass(frozen=True, slots=True)
class Data:
    """A piece of a message body, already de-chunked; pieces follow the bytes as they arrive."""

    data: bytes

    def __init__(self, data: bytes) -> None:  # see "written out" above
        object.__setattr__(self, "data", data)  # frozen: as the generated one does


@dataclass(frozen=True, slots=True)
class EndOfMessage:
    """The body is complete; ``trailers`` holds the chunked trailer section (RFC 9112 §7.1.2)."""

    trailers: Headers = ()


@dataclass(frozen=True, slots=True)
class ProtocolError:
    """The peer broke HTTP/1.1; answer ``status`` and close. Terminal."""

    status: int
    reason: str


class NeedData:
    """More bytes (or EOF, ``receive_data(b"")``) are needed before the next event."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NEED_DATA"


class Paused:
    """An Upgrade (or 101 response) completed: call ``detach()`` to tunnel or ``resume()``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "PAUSED"


class ConnectionClosed:
    """No further message: the peer closed cleanly, or the last message was not keep-alive."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "CONNECTION_CLOSED"


END_OF_MESSAGE: Final = EndOfMessage()
"""The end of a message without trailers (events are immutable values, so one is shared)."""
NEED_DATA: Final = NeedData()
PAUSED: Final = Paused()
CONNECTION_CLOSED: Final = ConnectionClosed()

Event = (
    RequestHead
    | ResponseHead
    | Data
    | EndOfMessage
    | ProtocolError
    | NeedData
    | Paused
    | ConnectionClosed
)
