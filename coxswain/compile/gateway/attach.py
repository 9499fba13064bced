"""Attaching routes to listeners: parentRefs, allowedRoutes and hostname intersection.

Rules (Gateway API v1: ParentReference, AllowedRoutes, HTTPRoute and GRPCRoute ``hostnames``),
the same for every route kind:
1. A parentRef names a Gateway or a ListenerSet (group ``gateway.networking.k8s.io``, kind
   ``Gateway`` or ``ListenerSet``), in the route's namespace unless it says otherwise; refs to
   parents that are not ours are ignored (another controller answers them). The route attaches
   to the listeners of that object only: a Gateway parentRef never reaches its ListenerSets'
   listeners (GEP-1713, "Gateway Parents and sectionName"). ``sectionName`` and ``port``
   narrow the listeners; none left is ``Accepted=False/NoMatchingParent``, as is a ListenerSet
   its Gateway does not take (``detached``).
2. A listener admits the route when its ``allowedRoutes.namespaces`` (``Same``: the namespace
   of the listener's owner, Gateway or ListenerSet; ``All``; or a label ``Selector`` over the
   route's Namespace) and ``kinds`` (its ``supportedKinds``) allow it
   (``NotAllowedByListeners`` otherwise).
3. All hostname intersection lives here: a listener without hostname takes every route
   hostname; a route without hostnames takes the listener's; otherwise each route hostname is
   kept when the listener's matches it, or replaced by the listener's when it is the narrower
   one. No intersection is ``NoMatchingListenerHostname``. Gateway API wildcards match one or
   more labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyrsistent import pmap

from coxswain.compile.model.gateway_objects import GATEWAY_GROUP
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.snapshot import CATCH_ALL
from coxswain.compile.status import Condition, problem

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyrsistent.typing import PMap

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.gateway.listeners import ListenerVerdict
    from coxswain.compile.gateway.route_rules import CompiledRoute
    from coxswain.compile.model.gateway_objects import CommonRoute, LabelSelector, ParentRef
    from coxswain.compile.model.objects import Namespace

__all__ = [
    "Attachment",
    "ParentVerdict",
    "RouteVerdict",
    "attach_route",
    "hostnames_overlap",
    "intersect_hostnames",
]

_NAME_LABEL = "kubernetes.io/metadata.name"
_PARENT_KINDS = frozenset({"Gateway", "ListenerSet"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Attachment:
    """A route attached to one listener, with the hostnames it serves there."""

    listener: ListenerVerdict
    hostnames: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParentVerdict:
    """The outcome of one parentRef that names one of our Gateways or ListenerSets."""

    ref: ParentRef
    parent: ObjectKey
    accepted: Condition
    attachments: tuple[Attachment, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteVerdict:
    """A compiled route and the outcome of each parentRef naming one of our Gateways or
    ListenerSets; ``notes`` are findings about listeners it does not serve although its
    parentRef is accepted (``cross_serving``)."""

    compiled: CompiledRoute
    parents: tuple[ParentVerdict, ...]
    notes: tuple[Diagnostic, ...] = ()


def attach_route(
    route: CommonRoute,
    parents: Mapping[ObjectKey, list[ListenerVerdict]],
    namespaces: Mapping[ObjectKey, Namespace],
    detached: Mapping[ObjectKey, str],
) -> list[ParentVerdict]:
    """Attach one route to the listeners its parentRefs name. Pure.

    Args:
        route: the route.
        parents: the listeners of each of our Gateways and ListenerSets, by the object's key.
        namespaces: for ``allowedRoutes`` selectors.
        detached: why each of our ListenerSets that did not join its Gateway has no listener.
    """
    verdicts: list[ParentVerdict] = []
    for ref in route.parent_refs:
        if ref.group != GATEWAY_GROUP or ref.kind not in _PARENT_KINDS:
            continue
        key = ObjectKey(ref.kind, ref.namespace or route.meta.key.namespace, ref.name)
        if (why := detached.get(key)) is not None:
            verdicts.append(_refused(route, ref, key, "NoMatchingParent", why))
            continue
        listeners = parents.get(key)
        if listeners is None:
            continue
        verdicts.append(_attach(route, ref, key, listeners, namespaces))
    return verdicts


def _attach(
    route: CommonRoute,
    ref: ParentRef,
    parent: ObjectKey,
    listeners: list[ListenerVerdict],
    namespaces: Mapping[ObjectKey, Namespace],
) -> ParentVerdict:
    candidates = [
        v
        for v in listeners
        if (ref.section_name is None or v.listener.name == ref.section_name)
        and (ref.port is None or v.listener.port == ref.port)
    ]
    if not candidates:
        wanted = " and ".join(
            part
            for part in (
                f"sectionName {ref.section_name!r}" if ref.section_name else "",
                f"port {ref.port}" if ref.port else "",
            )
            if part
        )
        return _refused(
            route, ref, parent, "NoMatchingParent", f"{parent} has no listener with {wanted}"
        )
    allowed = [v for v in candidates if _allows(v, route, namespaces)]
    if not allowed:
        return _refused(
            route,
            ref,
            parent,
            "NotAllowedByListeners",
            f"no listener of {parent} allows {route.meta.key.kind}s from namespace "
            f"{route.meta.key.namespace}",
        )
    attachments = [
        Attachment(listener=v, hostnames=hosts)
        for v in allowed
        if (route.hostnames or not route.has_hostnames)
        and (hosts := intersect_hostnames(v.listener.hostname, tuple(route.hostnames)))
    ]
    if not attachments:
        return _refused(
            route,
            ref,
            parent,
            "NoMatchingListenerHostname",
            f"no hostname of the route intersects a listener hostname of {parent}",
        )
    return ParentVerdict(
        ref=ref,
        parent=parent,
        accepted=Condition(type="Accepted", status=True, reason="Accepted"),
        attachments=tuple(attachments),
    )


def _refused(
    route: CommonRoute, ref: ParentRef, parent: ObjectKey, reason: str, message: str
) -> ParentVerdict:
    return ParentVerdict(
        ref=ref,
        parent=parent,
        accepted=problem("Accepted", reason, message, key=route.meta.key, field=ref.field),
        attachments=(),
    )


def _allows(
    verdict: ListenerVerdict, route: CommonRoute, namespaces: Mapping[ObjectKey, Namespace]
) -> bool:
    if (GATEWAY_GROUP, route.meta.key.kind) not in verdict.supported_kinds:
        return False
    allowed = verdict.listener.allowed_routes
    route_ns = route.meta.key.namespace
    if allowed.namespaces_from == "All":
        return True
    if allowed.namespaces_from == "Same":
        return route_ns == verdict.owner.namespace
    if allowed.namespaces_from == "Selector" and allowed.selector is not None:
        return matches_selector(allowed.selector, namespace_labels(namespaces, route_ns))
    return False


def namespace_labels(namespaces: Mapping[ObjectKey, Namespace], name: str) -> PMap[str, str]:
    """The labels of Namespace ``name`` as a selector sees them: its own (none when it is not in
    the input) and ``kubernetes.io/metadata.name``, which the API server sets on every
    Namespace (Kubernetes 1.22+)."""
    namespace = namespaces.get(ObjectKey("Namespace", "", name))
    return (pmap() if namespace is None else namespace.meta.labels).set(_NAME_LABEL, name)


def matches_selector(selector: LabelSelector, labels: PMap[str, str] | None) -> bool:
    """Whether a Namespace's labels satisfy a label selector (absent Namespace: no labels)."""
    if selector.problem is not None:
        return False
    found: Mapping[str, str] = labels if labels is not None else {}
    if any(found.get(k) != v for k, v in selector.match_labels.items()):
        return False
    for req in selector.match_expressions:
        present = req.key in found
        if req.operator == "In" and not (present and found[req.key] in req.values):
            return False
        if req.operator == "NotIn" and present and found[req.key] in req.values:
            return False
        if req.operator == "Exists" and not present:
            return False
        if req.operator == "DoesNotExist" and present:
            return False
    return True


def _wildcard_covers(wildcard: str, host: str) -> bool:
    """Gateway API: ``*.example.com`` matches ``a.example.com`` and ``a.b.example.com``."""
    return host.endswith(wildcard[1:]) and len(host) > len(wildcard) - 1


def intersect_hostnames(listener: str | None, route: tuple[str, ...]) -> tuple[str, ...]:
    """The hostnames a route serves on a listener; ``*`` means every host."""
    if not route:
        return (listener or "*",)
    if listener is None:
        return tuple(dict.fromkeys(route))
    found: list[str] = []
    for host in route:
        if host == listener:
            found.append(host)
        elif listener.startswith("*.") and _wildcard_covers(listener, host):
            found.append(host)  # the route's name is the narrower one
        elif host.startswith("*.") and _wildcard_covers(host, listener):
            found.append(listener)  # the listener's name is the narrower one
    return tuple(dict.fromkeys(found))


def hostnames_overlap(first: str, second: str) -> bool:
    """Whether some host matches both route hostnames as a listener serves them (``*``: every
    host; ``*.example.com``: one or more labels before ``example.com``)."""
    if CATCH_ALL in (first, second) or first == second:
        return True
    return (first.startswith("*.") and _wildcard_covers(first, second)) or (
        second.startswith("*.") and _wildcard_covers(second, first)
    )
