"""Cookie session affinity in the proxy (ingress-nginx's ``affinity: cookie``): the endpoint
``route.affinity`` picks becomes the request's only endpoint, so the forwarding path runs
unchanged (docs/migrating-from-ingress-nginx.md, "Session affinity").

The request's backend is replaced by a :class:`PinnedBackend` whose endpoints entry holds the
one endpoint picked; those entries are added to the snapshot's endpoints table on first use,
one per endpoint of a backend, so the table stays bounded by the snapshot. As in ingress-nginx
(without ``session-cookie-change-on-failure``), a request stays with its endpoint even when
that endpoint fails. A path with a canary keeps the canary's draw (``affinity-canary-behavior``
is not implemented), and so does one without endpoints.
"""

from __future__ import annotations

import dataclasses
import time
from email.utils import formatdate
from typing import TYPE_CHECKING

from coxswain.compile.snapshot import Backend
from coxswain.route.affinity import cookie_field, sticky_endpoint

if TYPE_CHECKING:
    import random
    from collections.abc import Sequence

    from coxswain.compile.snapshot import Affinity, Endpoint
    from coxswain.route import Decision

__all__ = ["PinnedBackend", "pinned"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PinnedBackend(Backend):
    """A backend whose endpoints entry is ``pinned_key``: one endpoint of it."""

    pinned_key: str

    @property
    def endpoints_key(self) -> str:
        return self.pinned_key


def pinned(
    endpoints: dict[str, Sequence[Endpoint]],
    decision: Decision,
    affinity: Affinity,
    headers: Sequence[tuple[bytes, bytes]],
    *,
    https: bool,
    rng: random.Random,
) -> Decision:
    """``decision`` with its backend pinned to the endpoint the cookie names (or a new one,
    with the cookie set on the response)."""
    if decision.status is not None or len(decision.backends) != 1:
        return decision
    backend = decision.backends[0]
    available = endpoints.get(backend.endpoints_key)
    if not available:
        return decision
    endpoint, value = sticky_endpoint(affinity, backend, available, headers, rng.getrandbits(63))
    key = f"{backend.endpoints_key}@{endpoint.address}:{endpoint.port}"
    if key not in endpoints:
        endpoints[key] = (endpoint,)
    fields = {f.name: getattr(backend, f.name) for f in dataclasses.fields(Backend)}
    decision = dataclasses.replace(decision, backends=(PinnedBackend(**fields, pinned_key=key),))
    if value is None:
        return decision
    expires = None
    if affinity.expires:
        expires = formatdate(time.time() + affinity.expires, usegmt=True)
    agent = next((v for n, v in headers if n.lower() == b"user-agent"), None)
    cookie = cookie_field(
        affinity,
        value,
        path="/",
        https=https,
        expires_at=expires,
        user_agent=None if agent is None else agent.decode("latin-1"),
    )
    return dataclasses.replace(
        decision, response_fields=(*decision.response_fields, (b"set-cookie", cookie))
    )
