"""A gRPC call's own deadline, ``grpc-timeout`` (gRPC over HTTP/2, PROTOCOL-HTTP2.md,
"Requests": ``Timeout → "grpc-timeout" TimeoutValue TimeoutUnit``, the value a positive
integer of at most 8 ASCII digits, the unit one of ``H`` hours, ``M`` minutes, ``S`` seconds,
``m`` milliseconds, ``u`` microseconds, ``n`` nanoseconds).

The proxy bounds a call by it as by a route's timeout, the smaller of the two winning: past
it the client has given up anyway, and the proxy answers 4 DEADLINE_EXCEEDED
(:mod:`.grpc_status`) rather than keep a backend stream nobody waits for. A value that does
not follow the grammar is ignored (no deadline), as a field the proxy cannot read must not cut
a call short. Pure.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["grpc_timeout"]

_UNITS: Final = {
    ord("H"): 3600.0,
    ord("M"): 60.0,
    ord("S"): 1.0,
    ord("m"): 1e-3,
    ord("u"): 1e-6,
    ord("n"): 1e-9,
}
_DIGITS: Final = frozenset(b"0123456789")


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
