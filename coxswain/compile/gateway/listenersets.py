"""ListenerSets (GEP-1713): which join which of our Gateways, in what order, and how they fare.

Rules (Gateway API v1 ``ListenerSet`` and ``AllowedListeners``, GEP-1713):
1. A ListenerSet is ours when its ``parentRef`` (group ``gateway.networking.k8s.io``, kind
   ``Gateway``, in the ListenerSet's namespace unless it says otherwise) names one of our
   Gateways. One naming a Gateway that is not in the input is ignored with a warning
   (``GatewayNotFound``), as a route's parentRef is.
2. It joins the Gateway when the Gateway's ``allowedListeners.namespaces`` admits its namespace:
   ``None`` (the default) none, ``Same`` the Gateway's, ``All`` every one, ``Selector`` those
   whose labels match. Otherwise it is ``Accepted=False/NotAllowed`` and has no listener on
   the Gateway.
3. Precedence: the Gateway's own listeners, then its ListenerSets oldest first, then by
   ``namespace/name`` (a ListenerSet without a creation time counts as the oldest). Each
   ListenerSet's listeners are judged against those the objects before it hold
   (:func:`.listeners.judge_listeners`, rule 2): the earlier one wins, so a ListenerSet never
   takes a port or a hostname from the Gateway or from an older sibling, and a conflict never
   refuses a listener of an earlier object.
4. ``Accepted`` is ``False/ParentNotAccepted`` while the Gateway is refused; otherwise
   ``True/Accepted`` when every listener is valid, ``True/ListenersNotValid`` when some are and
   ``False/ListenersNotValid`` when none is. ``Programmed`` is False with the same reason while
   ``Accepted`` is False (as the conformance tests expect), else True when some listener is
   programmed.
5. The Gateway's ``status.attachedListenerSets`` counts its ListenerSets that are
   ``Accepted=True``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.gateway.attach import matches_selector, namespace_labels
from coxswain.compile.gateway.listeners import holds_claim, judge_listeners
from coxswain.compile.model.gateway_objects import GATEWAY_GROUP
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.status import Condition, problem

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coxswain.compile.gateway.listeners import ListenerVerdict
    from coxswain.compile.gateway.refgrants import Grants
    from coxswain.compile.model.gateway_objects import Gateway, ListenerSet
    from coxswain.compile.model.state import ClusterState

__all__ = [
    "ListenerSetVerdict",
    "join_listener_sets",
    "listener_set_accepted",
    "listener_sets_not_found",
    "parent_key",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerSetVerdict:
    """One of our ListenerSets: its Gateway, why it is refused as a whole (``refusal``: rule 2
    or 4's ``ParentNotAccepted``; None otherwise), and its listeners' verdicts, in the
    Gateway's merged list (none when the Gateway does not admit it)."""

    listener_set: ListenerSet
    gateway: ObjectKey
    refusal: Condition | None
    listeners: tuple[ListenerVerdict, ...]

    @property
    def joined(self) -> bool:
        """Whether its listeners are part of the Gateway's (rule 2)."""
        return self.refusal is None or self.refusal.reason != "NotAllowed"


def parent_key(listener_set: ListenerSet) -> ObjectKey | None:
    """The key of the Gateway a ListenerSet's parentRef names; None for another kind."""
    ref = listener_set.parent
    if ref is None or (ref.group, ref.kind) != (GATEWAY_GROUP, "Gateway"):
        return None
    return ObjectKey("Gateway", ref.namespace or listener_set.meta.key.namespace, ref.name)


def join_listener_sets(
    gateway: Gateway,
    own: list[ListenerVerdict],
    state: ClusterState,
    grants: Grants,
    *,
    gateway_refused: bool,
    mixed: bool = False,
) -> tuple[list[ListenerSetVerdict], list[ListenerVerdict]]:
    """The ListenerSets of ``gateway``, judged (rules 2-4), and the Gateway's merged listeners:
    ``own`` (its own, judged) first, then those of the ListenerSets that joined, in
    precedence order (``mixed``: as :func:`.listeners.judge_listeners`). Pure."""
    key = gateway.meta.key
    found = [
        state.listener_sets[k]
        for k in state.listener_sets_by_parent.get((key.namespace, key.name), ())
        if parent_key(state.listener_sets[k]) == key
    ]
    found.sort(key=lambda s: (s.meta.created, s.meta.key.namespace, s.meta.key.name))
    merged = list(own)
    verdicts: list[ListenerSetVerdict] = []
    for listener_set in found:
        refusal = _not_allowed(gateway, listener_set, state)
        if refusal is not None:
            verdicts.append(
                ListenerSetVerdict(
                    listener_set=listener_set, gateway=key, refusal=refusal, listeners=()
                )
            )
            continue
        judged = judge_listeners(
            gateway,
            state,
            grants,
            listener_set=listener_set,
            claimed=[v for v in merged if holds_claim(v)],
            mixed=mixed,
        )
        merged.extend(judged)
        if gateway_refused:
            refusal = problem(
                "Accepted",
                "ParentNotAccepted",
                f"Gateway {key.ref} is not accepted",
                key=listener_set.meta.key,
                field="spec.parentRef",
            )
        verdicts.append(
            ListenerSetVerdict(
                listener_set=listener_set, gateway=key, refusal=refusal, listeners=tuple(judged)
            )
        )
    return verdicts, merged


def _not_allowed(
    gateway: Gateway, listener_set: ListenerSet, state: ClusterState
) -> Condition | None:
    """``Accepted=False/NotAllowed`` when the Gateway's ``allowedListeners`` does not admit the
    ListenerSet's namespace (rule 2), else None."""
    allowed = gateway.allowed_listeners
    namespace = listener_set.meta.key.namespace
    origin = allowed.namespaces_from
    if origin == "All":
        return None
    if origin == "Same" and namespace == gateway.meta.key.namespace:
        return None
    if (
        origin == "Selector"
        and allowed.selector is not None
        and matches_selector(allowed.selector, namespace_labels(state.namespaces, namespace))
    ):
        return None
    broken = None if allowed.selector is None else allowed.selector.problem
    why = {
        "None": "allows no ListenerSet",
        "Same": f"allows ListenerSets of namespace {gateway.meta.key.namespace} only",
        "Selector": f"does not select namespace {namespace}"
        if broken is None
        else f"has a namespace selector that selects nothing: {broken}",
    }.get(origin, f"has allowedListeners.namespaces.from {origin!r}, which admits none")
    return problem(
        "Accepted",
        "NotAllowed",
        f"Gateway {gateway.meta.key.ref} {why} (spec.allowedListeners)",
        key=listener_set.meta.key,
        field="spec.parentRef",
    )


def listener_set_accepted(verdict: ListenerSetVerdict) -> Condition:
    """The ListenerSet's ``Accepted`` condition (rule 4)."""
    if verdict.refusal is not None:
        return verdict.refusal
    invalid = [v.listener.name for v in verdict.listeners if not v.serving]
    if verdict.listeners and not invalid:
        return Condition(type="Accepted", status=True, reason="Accepted")
    return Condition(
        type="Accepted",
        status=len(invalid) < len(verdict.listeners),
        reason="ListenersNotValid",
        message=f"listeners not valid: {', '.join(invalid)}" if invalid else "no listener",
    )


def listener_sets_not_found(
    listener_sets: Iterable[ListenerSet], state: ClusterState
) -> list[Diagnostic]:
    """Warnings for ListenerSets whose parent Gateway is not in the input (rule 1)."""
    found: list[Diagnostic] = []
    for listener_set in listener_sets:
        key = parent_key(listener_set)
        if key is not None and key not in state.gateways:
            found.append(
                Diagnostic(
                    key=listener_set.meta.key,
                    field="spec.parentRef",
                    severity=Severity.WARNING,
                    reason="GatewayNotFound",
                    message=f"Gateway {key.ref} is not in the input; the ListenerSet is ignored",
                )
            )
    return found
