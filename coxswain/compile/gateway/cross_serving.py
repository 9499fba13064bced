"""HTTPRoutes and GRPCRoutes never share a hostname on one listener (GEP-1016, "Cross Serving").

GRPCRoute ``hostnames``: "If a Route (A) of type HTTPRoute or GRPCRoute is attached to a Listener
and that listener already has another Route (B) of the other type attached and the intersection
of the hostnames of A and B is non-empty, then the implementation MUST accept exactly one of
these two routes, determined by the following criteria, in order: the oldest Route based on
creation timestamp; the Route appearing first in alphabetical order by {namespace}/{name}. The
rejected Route MUST raise an 'Accepted' condition with a status of 'False' in the corresponding
RouteParentStatus."

Rules:
1. Per listener, routes are taken oldest first, then by ``namespace/name``; a route's attachment
   is dropped when one of the hostnames it serves there overlaps one a route of the other kind,
   taken before it, holds there (``attach.hostnames_overlap``). What a dropped attachment would
   have held holds nothing, so a route rejected by an older one never rejects a younger one.
2. A parentRef left with no listener is ``Accepted=False/HostnameConflict`` (an
   implementation-specific reason, as Istio and Traefik name it). A parentRef that keeps some
   listeners stays accepted; each listener it lost is a warning on the route. Neither names the
   route that holds the hostname: another namespace's routes are not a tenant's to learn of.
3. Only the listener's own attachments count: routes on other listeners of the same port stay
   apart, since a request is decided by its listener first.
After this pass a route host of a listener holds the rules of one kind only, which the tables
and the proxy rely on (``route.gateway``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.gateway.attach import hostnames_overlap
from coxswain.compile.snapshot import CATCH_ALL
from coxswain.compile.status import problem

if TYPE_CHECKING:
    from collections.abc import Sequence

    from coxswain.compile.gateway.attach import Attachment, ParentVerdict, RouteVerdict

__all__ = ["settle_cross_serving"]

_REASON = "HostnameConflict"


def settle_cross_serving(routes: Sequence[RouteVerdict]) -> tuple[RouteVerdict, ...]:
    """The routes with their attachments that lose to a route of the other kind dropped, in
    the order given. Pure."""
    if len({route.compiled.route.meta.key.kind for route in routes}) < 2:
        return tuple(routes)  # one kind: nothing to settle
    held: dict[int, dict[str, list[str]]] = {}  # id(listener verdict) → kind → hostnames
    lost: set[tuple[int, int, int]] = set()  # (route, parentRef, attachment) positions
    order = sorted(range(len(routes)), key=lambda i: routes[i].compiled.route.meta.age_order)
    for r in order:
        kind = routes[r].compiled.route.meta.key.kind
        for p, parent in enumerate(routes[r].parents):
            for a, attachment in enumerate(parent.attachments):
                on_listener = held.setdefault(id(attachment.listener), {})
                others = [h for k, hosts in on_listener.items() if k != kind for h in hosts]
                if any(hostnames_overlap(h, o) for h in attachment.hostnames for o in others):
                    lost.add((r, p, a))
                else:
                    on_listener.setdefault(kind, []).extend(attachment.hostnames)
    if not lost:
        return tuple(routes)
    return tuple(_settled(r, route, lost) for r, route in enumerate(routes))


def _settled(index: int, route: RouteVerdict, lost: set[tuple[int, int, int]]) -> RouteVerdict:
    parents: list[ParentVerdict] = []
    notes: list[Diagnostic] = list(route.notes)
    for p, parent in enumerate(route.parents):
        dropped = [a for i, a in enumerate(parent.attachments) if (index, p, i) in lost]
        if not dropped:
            parents.append(parent)
            continue
        kept = tuple(a for i, a in enumerate(parent.attachments) if (index, p, i) not in lost)
        key = route.compiled.route.meta.key
        if kept:
            notes.extend(
                Diagnostic(
                    key=key,
                    field=parent.ref.field,
                    severity=Severity.WARNING,
                    reason=_REASON,
                    message=f"not served on {_listener(a)}: {_why(key.kind, a)}",
                )
                for a in dropped
            )
            parents.append(replace(parent, attachments=kept))
            continue
        message = "; ".join(f"{_listener(a)}: {_why(key.kind, a)}" for a in dropped)
        accepted = problem("Accepted", _REASON, message, key=key, field=parent.ref.field)
        parents.append(replace(parent, accepted=accepted, attachments=()))
    return replace(route, parents=tuple(parents), notes=tuple(notes))


def _listener(attachment: Attachment) -> str:
    verdict = attachment.listener
    return f"listener {verdict.listener.name} of {verdict.owner}"


def _why(kind: str, attachment: Attachment) -> str:
    other = "a GRPCRoute" if kind == "HTTPRoute" else "an HTTPRoute"
    return (
        f"{other} that takes precedence (older, or first by namespace/name) serves a "
        f"hostname overlapping {', '.join(map(_shown, attachment.hostnames))} there, and "
        "HTTPRoutes and GRPCRoutes do not share hostnames on a listener (GEP-1016)"
    )


def _shown(hostname: str) -> str:
    return "* (every host)" if hostname == CATCH_ALL else hostname
