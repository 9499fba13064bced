"""How a request picks its backend and the order it tries that backend's endpoints: a backend
at random in proportion to its weight (Gateway API ``backendRefs[].weight``; ingress-nginx's
canary weights are decided before, in ``route.canary``), then the endpoints from the backend's
round-robin turn on, so that successive requests spread over them and a failed endpoint is
followed by the next (docs/architecture.md, "Data-plane rules"). Used by the HTTP forwarder
(:mod:`.upstream`), its mirrors and the layer-4 listeners (:mod:`.streams.server`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import random
    from collections.abc import Sequence

    from coxswain.compile.snapshot import Backend, Endpoint

__all__ = ["RoundRobin", "pick_backend"]


@dataclass(slots=True)
class RoundRobin:
    """Per backend, the index of the endpoint the next request starts with."""

    next_index: dict[str, int] = field(default_factory=dict)

    def order(self, key: str, endpoints: Sequence[Endpoint]) -> Sequence[Endpoint]:
        """The endpoints rotated to start at this backend's turn, then advance the turn."""
        if len(endpoints) == 1:
            return endpoints
        start = self.next_index.get(key, 0) % len(endpoints)
        self.next_index[key] = start + 1
        return [*endpoints[start:], *endpoints[:start]]


def pick_backend(
    backends: Sequence[Backend], weights: Sequence[int], rng: random.Random
) -> Backend | None:
    """One of ``backends`` (those of a decision with a weight above 0, :class:`~.served.Routed`)
    chosen at random in proportion to ``weights``; None when there is none."""
    if len(backends) == 1:
        return backends[0]
    if not backends:
        return None
    return rng.choices(backends, weights=weights)[0]
