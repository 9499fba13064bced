"""nginx's request-rate limit (``limit_req … nodelay``, the algorithm of its
``ngx_http_limit_req_module``), for ingress-nginx's ``limit-rps`` and ``limit-rpm``
(docs/migrating-from-ingress-nginx.md, "Access and limits"). Pure: the proxy keeps each
client's state and the clock (``shell.dataplane.rate_limits``).

A client's state is its *excess*: requests admitted beyond the rate, leaking away at the rate.
A request adds one; it is refused when that would bring the excess over the burst, and a
refused request leaves the state as it was. So a client sending faster than the rate gets
``burst`` requests at once, then the rate, however fast it sends; a new client starts at 0.
"""

from __future__ import annotations

__all__ = ["admitted"]


def admitted(excess: float, elapsed: float, rate: float, burst: float) -> float | None:
    """The client's new excess when a request comes ``elapsed`` seconds after its last
    admitted one, at ``rate`` requests a second with ``burst``; None when it is refused."""
    after = max(0.0, excess - rate * max(0.0, elapsed)) + 1
    return None if after > burst else after
