"""The status expectations of the conformance tests, on the compiler's desired statuses.

Each check is one helper of upstream's ``conformance/utils/kubernetes/helpers.go`` (v1.6.1),
named in snake case as a scenario step, with its rules:

- a condition is ``[type, status, reason]``; an empty status or reason matches any
  (``findConditionInList``); a list of them matches when each is found (``conditionsMatch``);
- every condition read must carry the object's generation
  (``ConditionsHaveLatestObservedGeneration``);
- a route parent matches an expected one on controller name, group, kind, name and namespace
  (the namespace may be left out unless the test requires it), never on section name
  (``parentsForRouteMatch``).

Upstream polls until a check holds; the compiler's output is final, so each check is read once.
Each function returns why the check fails, or None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from coxswain.compile.config import DEFAULT_GATEWAY_CONTROLLER
from coxswain.compile.provision import GATEWAY_NAME_LABEL

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.conformance.world import Compiled

__all__ = ["STATUS_CHECKS"]

GROUP: Final = "gateway.networking.k8s.io"
Condition = list[str]
Body = dict[str, Any]


def _found(conditions: list[Body], wanted: Condition) -> bool:
    kind, status, reason = wanted
    return any(
        c["type"] == kind and status in ("", c["status"]) and reason in ("", c["reason"])
        for c in conditions
    )


def _missing(conditions: list[Body], wanted: list[Condition]) -> Condition | None:
    return next((w for w in wanted if not _found(conditions, w)), None)


def _object(compiled: Compiled, kind: str, key: str) -> Body:
    item = compiled.statuses.get((kind, key))
    if item is None:
        raise AssertionError(f"{kind} {key} has no status")
    return item


def _stale(item: Body, conditions: list[Body]) -> str | None:
    generation = item["metadata"]["generation"]
    stale = [c["type"] for c in conditions if c.get("observedGeneration") != generation]
    return f"conditions {stale} do not have observedGeneration {generation}" if stale else None


def _naming(entries: list[Body], ref: str, gateway: str, condition: Condition) -> bool:
    """Whether an entry whose ``ref`` (``parentRef``, ``ancestorRef``) names the Gateway by
    name, and by namespace unless it leaves that out, has the condition."""
    namespace, name = gateway.split("/")
    return any(
        e[ref]["name"] == name
        and e[ref].get("namespace", namespace) == namespace
        and _found(e["conditions"], condition)
        for e in entries
    )


def _parents(compiled: Compiled, route: str, kind: str = "HTTPRoute") -> tuple[Body, list[Body]]:
    item = _object(compiled, kind, route)
    return item, item["status"].get("parents", [])


def route_condition(
    compiled: Compiled, *, route: str, gateway: str, condition: Condition,
    kind: str = "HTTPRoute",
) -> str | None:  # fmt: skip
    """``HTTPRouteMustHaveCondition`` (``TLSRouteMustHaveCondition``, ``TCPRoute…``,
    ``UDPRoute…`` with ``kind``): a parent naming the Gateway has the condition."""
    item, parents = _parents(compiled, route, kind)
    for parent in parents:
        if problem := _stale(item, parent["conditions"]):
            return problem
    if _naming(parents, "parentRef", gateway, condition):
        return None
    return f"{kind} {route} has no parent {gateway} with {condition}: {parents}"


def route_parents(
    compiled: Compiled, *, route: str, parents: list[Body], namespace_required: bool = False,
    kind: str = "HTTPRoute",
) -> str | None:  # fmt: skip
    """``RouteMustHaveParents``: each expected parent (``gateway``, optional ``kind``,
    ``conditions``) matches one in status."""
    item, actual = _parents(compiled, route, kind)
    for parent in actual:
        if problem := _stale(item, parent["conditions"]):
            return problem
    for expected in parents:
        namespace, name = expected["gateway"].split("/")
        wanted_kind = expected.get("kind", "Gateway")
        if not any(
            a["controllerName"] == DEFAULT_GATEWAY_CONTROLLER
            and a["parentRef"].get("group", GROUP) == GROUP
            and a["parentRef"].get("kind", "Gateway") == wanted_kind
            and a["parentRef"]["name"] == name
            and (
                a["parentRef"].get("namespace") == namespace
                or (not namespace_required and "namespace" not in a["parentRef"])
            )
            and _missing(a["conditions"], expected.get("conditions", [])) is None
            for a in actual
        ):
            return f"{kind} {route}: no parent matches {expected}: {actual}"
    return None


def gateway_and_routes_accepted(
    compiled: Compiled, *, gateway: str, routes: list[str], listeners: list[str] | None = None,
    kind: str = "Gateway", route_kind: str = "HTTPRoute",
) -> str | None:  # fmt: skip
    """``GatewayAndHTTPRoutesMustBeAccepted`` (``RoutesAndParentMustBeAccepted``): the Gateway
    has an address; each route has the parent ``Accepted=True/Accepted`` (one per listener
    named); every listener is ResolvedRefs, Accepted and Programmed."""
    if kind == "Gateway" and (problem := gateway_address(compiled, gateway=gateway)):
        return problem
    accepted = {"gateway": gateway, "kind": kind, "conditions": [["Accepted", "True", "Accepted"]]}
    for route in routes:
        required = route.split("/")[0] != gateway.split("/")[0]
        problem = route_parents(
            compiled, route=route, parents=[accepted] * len(listeners or [None]),
            namespace_required=required, kind=route_kind,
        )  # fmt: skip
        if problem:
            return problem
    return listener_conditions(
        compiled,
        gateway=gateway,
        kind=kind,
        conditions=[
            ["ResolvedRefs", "True", ""],
            ["Accepted", "True", ""],
            ["Programmed", "True", ""],
        ],
    )


def listener_conditions(
    compiled: Compiled, *, gateway: str, conditions: list[Condition],
    listeners: list[str] | None = None, kind: str = "Gateway",
) -> str | None:  # fmt: skip
    """``GatewayListenersMustHaveConditions``: every listener (or each one named, all of which
    must be in status) has every condition; ``ListenerSetListenersMustHaveConditions`` also
    wants the ListenerSet's conditions of its generation."""
    item = _object(compiled, kind, gateway)
    if kind == "ListenerSet" and (problem := _stale(item, item["status"].get("conditions", []))):
        return problem
    statuses = item["status"].get("listeners", [])
    seen = set()
    for listener in statuses:
        if listeners and listener["name"] not in listeners:
            continue
        if (missing := _missing(listener["conditions"], conditions)) is not None:
            return f"{kind} {gateway} listener {listener['name']} lacks {missing}: {listener}"
        seen.add(listener["name"])
    if listeners and set(listeners) - seen:
        return f"{kind} {gateway}: listeners {sorted(set(listeners) - seen)} not in status"
    return None


def listener_condition(
    compiled: Compiled, *, gateway: str, listener: str, conditions: list[Condition]
) -> str | None:
    """``GatewayListenerMustHaveConditions``: the named listener has every condition."""
    for status in _object(compiled, "Gateway", gateway)["status"].get("listeners", []):
        if status["name"] == listener:
            missing = _missing(status["conditions"], conditions)
            return None if missing is None else f"listener {listener} lacks {missing}: {status}"
    return f"Gateway {gateway} has no listener {listener} in status"


def gateway_listeners(
    compiled: Compiled, *, gateway: str, listeners: list[Body], kind: str = "Gateway"
) -> str | None:
    """``GatewayStatusMustHaveListeners``: exactly these listeners, each with at least its
    supported kinds, its attached route count and its conditions."""
    item = _object(compiled, kind, gateway)
    actual = item["status"].get("listeners", [])
    if problem := _stale(item, item["status"].get("conditions", [])):
        return problem
    if len(actual) != len(listeners):
        return f"expected {len(listeners)} listeners in status, got {actual}"
    for expected in listeners:
        found = next((a for a in actual if a["name"] == expected["name"]), None)
        if found is None:
            return f"no status for listener {expected['name']}"
        kinds = {(k.get("group", GROUP), k["kind"]) for k in found.get("supportedKinds", [])}
        wanted = {(GROUP, k) for k in expected.get("kinds", [])}
        if (not wanted and kinds) or wanted - kinds:
            return f"listener {expected['name']}: supportedKinds {kinds}, expected {wanted}"
        if found.get("attachedRoutes") != expected.get("attached_routes", 0):
            return f"listener {expected['name']}: attachedRoutes {found.get('attachedRoutes')}"
        if (missing := _missing(found["conditions"], expected.get("conditions", []))) is not None:
            return f"listener {expected['name']} lacks {missing}: {found}"
    return None


def gateway_condition(
    compiled: Compiled, *, gateway: str, condition: Condition, kind: str = "Gateway"
) -> str | None:
    """``GatewayMustHaveCondition`` (and ``ListenerSetMustHaveCondition``)."""
    item = _object(compiled, kind, gateway)
    conditions = item["status"].get("conditions", [])
    if problem := _stale(item, conditions):
        return problem
    return None if _found(conditions, condition) else f"{kind} {gateway} lacks {condition}"


def attached_listener_sets(compiled: Compiled, *, gateway: str, count: int) -> str | None:
    """``GatewayMustHaveAttachedListeners``: ``status.attachedListenerSets`` (0 when unset)."""
    item = _object(compiled, "Gateway", gateway)
    if problem := _stale(item, item["status"].get("conditions", [])):
        return problem
    got = item["status"].get("attachedListenerSets", 0)
    return None if got == count else f"Gateway {gateway}: {got} attached ListenerSets, not {count}"


def gateway_addresses(
    compiled: Compiled, *, gateway: str, addresses: list[list[str]]
) -> str | None:
    """``GatewayStaticAddresses``' last checks: ``status.addresses`` is exactly these
    ``[type, value]``."""
    got = [
        [a.get("type"), a["value"]]
        for a in _object(compiled, "Gateway", gateway)["status"].get("addresses", [])
    ]
    return None if got == addresses else f"Gateway {gateway}: addresses {got}, not {addresses}"


def infrastructure_metadata(
    compiled: Compiled, *, gateway: str, labels: dict[str, str], annotations: dict[str, str]
) -> str | None:
    """``GatewayInfrastructure``: some ServiceAccount, Pod or Service of the Gateway's namespace
    carries the label ``gateway.networking.k8s.io/gateway-name: <name>``; the first of each kind
    carries the Gateway's infrastructure labels and annotations (read here from what the
    controller provisions)."""
    namespace, name = gateway.split("/")
    found = 0
    for kind in ("ServiceAccount", "Pod", "Service"):
        made = [
            o
            for o in compiled.provisioned
            if o["kind"] == kind
            and o["metadata"].get("namespace") == namespace
            and o["metadata"].get("labels", {}).get(GATEWAY_NAME_LABEL) == name
        ]
        if not made:
            continue
        found += 1
        meta = made[0]["metadata"]
        for wanted, got in (
            (labels, meta.get("labels", {})),
            (annotations, meta.get("annotations", {})),
        ):
            if not wanted.items() <= got.items():
                return f"{kind} {meta['name']} metadata {got} lacks {wanted}"
    return None if found else f"nothing generated for Gateway {gateway} in {namespace}"


def policy_condition(
    compiled: Compiled, *, policy: str, gateway: str, condition: Condition
) -> str | None:
    """``BackendTLSPolicyMustHaveCondition``: every ancestor's conditions of the policy's
    generation, and an ancestor naming the Gateway with the condition."""
    item = _object(compiled, "BackendTLSPolicy", policy)
    ancestors = item["status"].get("ancestors", [])
    if problem := policy_latest(compiled, policy=policy):
        return problem
    if _naming(ancestors, "ancestorRef", gateway, condition):
        return None
    return f"BackendTLSPolicy {policy} has no ancestor {gateway} with {condition}: {ancestors}"


def policy_latest(compiled: Compiled, *, policy: str) -> str | None:
    """``BackendTLSPolicyMustHaveLatestConditions``: every ancestor's conditions carry the
    policy's generation."""
    item = _object(compiled, "BackendTLSPolicy", policy)
    for ancestor in item["status"].get("ancestors", []):
        if problem := _stale(item, ancestor["conditions"]):
            return problem
    return None


def gateway_address(compiled: Compiled, *, gateway: str) -> str | None:
    """``WaitForGatewayAddress``: an address with a type in ``status.addresses``."""
    addresses = _object(compiled, "Gateway", gateway)["status"].get("addresses", [])
    return None if any(a.get("type") for a in addresses) else f"Gateway {gateway} has no address"


def gateway_zero_routes(compiled: Compiled, *, gateway: str) -> str | None:
    """``GatewayMustHaveZeroRoutes``: no listener in status, or one with no route."""
    listeners = _object(compiled, "Gateway", gateway)["status"].get("listeners", [])
    if not listeners or (len(listeners) == 1 and listeners[0].get("attachedRoutes") == 0):
        return None
    return f"Gateway {gateway} has routes attached: {listeners}"


def route_no_accepted_parents(
    compiled: Compiled, *, route: str, kind: str = "HTTPRoute"
) -> str | None:
    """``HTTPRouteMustHaveNoAcceptedParents`` (``TLSRouteMustHaveNoAcceptedParents`` with
    ``kind``): no parent, or one that is not Accepted."""
    item, parents = _parents(compiled, route, kind)
    if not parents:
        return None
    if len(parents) > 1:
        return f"{kind} {route} has {len(parents)} parents"
    if problem := _stale(item, parents[0]["conditions"]):
        return problem
    if _found(parents[0]["conditions"], ["Accepted", "False", ""]):
        return None
    return f"{kind} {route} has an accepted parent: {parents}"


def gateway_class_condition(
    compiled: Compiled, *, gateway_class: str, condition: Condition
) -> str | None:
    """``GWCMustHaveAcceptedConditionTrue`` and the like, with the generation check."""
    item = _object(compiled, "GatewayClass", f"/{gateway_class}")
    conditions = item["status"].get("conditions", [])
    if problem := _stale(item, conditions):
        return problem
    return None if _found(conditions, condition) else f"GatewayClass lacks {condition}"


STATUS_CHECKS: Final[dict[str, Callable[..., str | None]]] = {
    "attached_listener_sets": attached_listener_sets,
    "gateway_address": gateway_address,
    "gateway_addresses": gateway_addresses,
    "gateway_and_routes_accepted": gateway_and_routes_accepted,
    "gateway_class_condition": gateway_class_condition,
    "gateway_condition": gateway_condition,
    "gateway_listeners": gateway_listeners,
    "gateway_zero_routes": gateway_zero_routes,
    "infrastructure_metadata": infrastructure_metadata,
    "listener_condition": listener_condition,
    "listener_conditions": listener_conditions,
    "policy_condition": policy_condition,
    "policy_latest": policy_latest,
    "route_condition": route_condition,
    "route_no_accepted_parents": route_no_accepted_parents,
    "route_parents": route_parents,
}
"""The checks a scenario step may name, each called with the step's fields."""
