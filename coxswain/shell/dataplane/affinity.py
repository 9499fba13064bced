"""Cookie session affinity in the proxy (ingress-nginx's ``affinity: cookie``): the endpoint
``route.affinity`` picks becomes the request's only endpoint, so the forwarding path runs
unchanged (docs/migrating-from-ingress-nginx.md, "Session affinity").

The request's backend is replaced by a :class:`PinnedBackend` whose endpoints entry holds the
one endpoint picked; those entries are added to the snapshot's endpoints table on first use,
one per endpoint of a backend, so the table stays bounded by the snapshot. As in ingress-nginx
(without ``session-cookie-change-on-failure``), a request stays with its endpoint even when
that endpoint fails. With it, the entry holds the endpoint picked and then the backend's
others, in the backend's order from the one after it, and the forwarder keeps that order (no
round-robin): a connection the endpoint refuses goes to the next, as nginx's
``proxy_next_upstream error`` passes it on, and the response then gets the cookie naming the
endpoint that served (:meth:`PinnedBackend.served_fields`; ``route.affinity`` rule 6). A path
with a canary keeps the canary's draw (``affinity-canary-behavior`` is not implemented), and
so does one without endpoints.
"""

from __future__ import annotations

import dataclasses
import time
from email.utils import formatdate
from typing import TYPE_CHECKING

from coxswain.compile.snapshot import Backend
from coxswain.route.affinity import cookie_field, sticky_endpoint, value_for

if TYPE_CHECKING:
    import random
    from collections.abc import Sequence

    from coxswain.compile.snapshot import Affinity, Endpoint
    from coxswain.route import Decision

__all__ = ["Failover", "PinnedBackend", "pinned"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Failover:
    """What a response served by another endpoint than ``sticky`` needs for its cookie."""

    affinity: Affinity
    backend: Backend
    endpoints: tuple[Endpoint, ...]
    sticky: str  # "address:port", as the forwarder names the endpoint that served
    https: bool
    user_agent: str | None
    draw: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PinnedBackend(Backend):
    """A backend whose endpoints entry is ``pinned_key``: one endpoint of it, or, with
    ``failover``, that endpoint and then the others, tried in that order."""

    pinned_key: str
    failover: Failover | None = None

    @property
    def endpoints_key(self) -> str:
        return self.pinned_key

    def served_fields(
        self, served_by: str, headers: list[tuple[bytes, bytes]]
    ) -> list[tuple[bytes, bytes]]:
        """``headers`` of a response that ``served_by`` ("address:port") served, with the
        cookie naming it when it is not the endpoint picked (module docstring)."""
        failover = self.failover
        if failover is None or served_by == failover.sticky:
            return headers
        served = next((e for e in failover.endpoints if f"{e.address}:{e.port}" == served_by), None)
        if served is None:
            return headers
        affinity = failover.affinity
        value = value_for(affinity, failover.backend, failover.endpoints, served, failover.draw)
        if value is None:
            return headers
        named = f"{affinity.cookie_name}=".encode("latin-1")
        kept = [(n, v) for n, v in headers if n != b"set-cookie" or not v.startswith(named)]
        cookie = _cookie(affinity, value, https=failover.https, user_agent=failover.user_agent)
        kept.append((b"set-cookie", cookie))
        return kept


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
    draw = rng.getrandbits(63)
    endpoint, value = sticky_endpoint(affinity, backend, available, headers, draw)
    sticky = f"{endpoint.address}:{endpoint.port}"
    agent_field = next((v for n, v in headers if n.lower() == b"user-agent"), None)
    agent = None if agent_field is None else agent_field.decode("latin-1")
    failover = None
    if affinity.change_on_failure and len(available) > 1:
        key = f"{backend.endpoints_key}@{sticky}+"
        if key not in endpoints:
            at = available.index(endpoint)
            endpoints[key] = (endpoint, *available[at + 1 :], *available[:at])
        failover = Failover(
            affinity=affinity,
            backend=backend,
            endpoints=tuple(available),
            sticky=sticky,
            https=https,
            user_agent=agent,
            draw=draw + 1,
        )
    else:
        key = f"{backend.endpoints_key}@{sticky}"
        if key not in endpoints:
            endpoints[key] = (endpoint,)
    fields = {f.name: getattr(backend, f.name) for f in dataclasses.fields(Backend)}
    chosen = PinnedBackend(**fields, pinned_key=key, failover=failover)
    decision = dataclasses.replace(decision, backends=(chosen,))
    if value is None:
        return decision
    cookie = _cookie(affinity, value, https=https, user_agent=agent)
    return dataclasses.replace(
        decision, response_fields=(*decision.response_fields, (b"set-cookie", cookie))
    )


def _cookie(affinity: Affinity, value: str, *, https: bool, user_agent: str | None) -> bytes:
    expires = None
    if affinity.expires:
        expires = formatdate(time.time() + affinity.expires, usegmt=True)
    return cookie_field(
        affinity, value, path="/", https=https, expires_at=expires, user_agent=user_agent
    )
