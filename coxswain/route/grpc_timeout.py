"""A gRPC call's own deadline, ``grpc-timeout`` (gRPC over HTTP/2, PROTOCOL-HTTP2.md,
"Requests": ``Timeout → "grpc-timeout" TimeoutValue TimeoutUnit``, the value a positive
integer of at most 8 ASCII digits, the unit one of ``H`` hours, ``M`` minutes, ``S`` seconds,
``m`` milliseconds, ``u`` microseconds, ``n`` nanoseconds).

The proxy bounds a call by it as by a route's timeout, the smaller of the two winning: past
it the client has given up anyway, and the proxy answers 4 DEADLINE_EXCEEDED
(:mod:`.grpc_status`) rather than keep a backend stream nobody waits for. A value that does
not follow the grammar is ignored (no deadline), as a field the proxy cannot read must not cut
a call short.

A proxy passes the deadline on, less the time the call already spent in it (PROTOCOL-HTTP2.md:
the timeout is the time the client is willing to wait, and it propagates): the ``grpc-timeout``
a backend gets is what remains of the exchange's deadline when the request's HEADERS are made
(:func:`forwarded_fields`), the smaller of the client's own and the route's timeout; a gRPC call
without one gets one when the route bounds it. It is written in the finest unit whose value
fits in 8 digits, rounded down, so that the backend never waits longer than the proxy. Pure.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

from coxswain.route.grpc_status import is_grpc_media_type

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["forwarded_fields", "grpc_timeout", "timeout_value"]

_UNITS: Final = {
    ord("H"): 3600.0,
    ord("M"): 60.0,
    ord("S"): 1.0,
    ord("m"): 1e-3,
    ord("u"): 1e-6,
    ord("n"): 1e-9,
}
_DIGITS: Final = frozenset(b"0123456789")
_LARGEST: Final = 99_999_999  # 8 digits
_WRITTEN: Final = ((b"n", 1e9), (b"u", 1e6), (b"m", 1e3), (b"S", 1.0), (b"M", 1 / 60))  # per s


def grpc_timeout(headers: Sequence[tuple[bytes, bytes]]) -> float:
    """The seconds the request's ``grpc-timeout`` field gives, or ``math.inf`` without a
    readable one (names in lower case, as the proxy forwards them)."""
    for name, value in headers:
        if name == b"grpc-timeout":
            digits = value[:-1]
            unit = _UNITS.get(value[-1]) if value else None
            if unit is None or not 0 < len(digits) <= 8 or not _DIGITS.issuperset(digits):
                return math.inf
            return int(digits) * unit
    return math.inf


def timeout_value(seconds: float) -> bytes:
    """``seconds`` (finite) as a ``grpc-timeout`` value: the finest unit whose value fits in 8
    digits, rounded down, at least 1 (a deadline that passed is all but over)."""
    for unit, per_second in _WRITTEN:
        count = int(seconds * per_second)
        if count <= _LARGEST:
            return b"%d%s" % (max(count, 1), unit)
    return b"%dH" % min(max(int(seconds / 3600.0), 1), _LARGEST)


def forwarded_fields(
    fields: Sequence[tuple[bytes, bytes]], remaining: float
) -> Sequence[tuple[bytes, bytes]]:
    """A request's fields to an HTTP/2 backend with ``remaining`` seconds left of its exchange
    (the module's rules): ``grpc-timeout`` rewritten to what remains, or added to a gRPC call
    (``content-type`` ``application/grpc``…) when ``remaining`` is finite; ``fields`` as they
    are otherwise (names in lower case, as the proxy forwards them)."""
    if remaining == math.inf:
        return fields
    grpc = False  # the call had no grpc-timeout: only a gRPC call gets one
    for index, (name, value) in enumerate(fields):
        if name == b"grpc-timeout":  # an unreadable one too: the proxy's deadline replaces it
            return [*fields[:index], (name, timeout_value(remaining)), *fields[index + 1 :]]
        if name == b"content-type":
            grpc = is_grpc_media_type(value.decode("latin-1"))
    if not grpc:
        return fields
    return [*fields, (b"grpc-timeout", timeout_value(remaining))]
