"""What a scope's Gateway API model adds to its compile's findings and reads, patched as routes
change.

Why: docs/architecture.md, "The pure core" (``compile.memo``). A compile reports every finding
of its model (``gateway.status.gateway_diagnostics`` and the decode findings of the objects it
judged) and the Secrets and Services the model read. Those of the passes before the routes'
are the same while those passes' verdicts are the same objects, and a route's are its
verdict's; so with the cells patched for a few routes (``gateway.cells.GatewayCells.change``)
a one-route edit need not walk every route and listener of the shared pool: the frame's part
is kept whole and the routes' part patched for the verdicts that went and came. The findings
are a set to their reader (``api.findings`` sorts them), so their order here is free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from coxswain.compile.gateway.status import frame_diagnostics, route_diagnostics

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.gateway.attach import RouteVerdict
    from coxswain.compile.gateway.cells import GatewayCells
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.model.keys import ObjectKey

__all__ = ["ModelFindings", "model_findings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelFindings:
    """A model's findings and reads but the policies' and ``dangling``: ``frame``, the passes'
    verdicts they were read from; ``secrets`` the certificate and CA Secrets and ConfigMaps of
    the listeners and Gateways' references; ``frame_found`` the findings of those passes;
    ``routes`` the verdicts of the routes' part; ``read`` each Service those routes read, with
    how many read it; ``route_found`` by ``id`` of verdict, the findings of each route that has
    some (with the verdict, which keeps the ``id`` from being reused)."""

    frame: tuple[object, ...]
    secrets: frozenset[ObjectKey]
    frame_found: tuple[Diagnostic, ...]
    routes: tuple[RouteVerdict, ...]
    read: dict[ObjectKey, int]
    route_found: dict[int, tuple[RouteVerdict, tuple[Diagnostic, ...]]]

    def found(self) -> Iterable[Diagnostic]:
        """Every finding held."""
        yield from self.frame_found
        for _, found in self.route_found.values():
            yield from found


def model_findings(
    model: GatewayModel,
    cells: GatewayCells,
    earlier: ModelFindings | None = None,
    earlier_cells: GatewayCells | None = None,
) -> ModelFindings:
    """``model``'s ``ModelFindings``; ``earlier`` those of an earlier call, reused for the
    frame when its passes' verdicts are the same objects, and patched for the routes when
    ``cells`` were patched from ``earlier_cells`` (``GatewayCells.change``) built from the
    routes ``earlier`` holds. Pure: the same with or without ``earlier``."""
    frame = (
        model.classes,
        model.class_accepted,
        model.gateways,
        model.unserved,
        model.gateway_accepted,
        model.placements,
        model.addresses,
        model.listeners,
        model.listener_sets,
        model.gateway_refs,
        model.ports,
    )
    if earlier is not None and all(a is b for a, b in zip(frame, earlier.frame, strict=True)):
        secrets, frame_found = earlier.secrets, earlier.frame_found
    else:
        secrets, frame_found = _frame_part(model)
    change = cells.change
    if (
        earlier is not None
        and change is not None
        and earlier_cells is not None
        and earlier.routes is earlier_cells.routes
    ):
        read, route_found = dict(earlier.read), dict(earlier.route_found)
        gone, fresh = change
        for part in gone:
            route_found.pop(id(part.route), None)
            for key in part.route.compiled.read:
                read[key] -= 1
                if not read[key]:
                    del read[key]
        _add(read, route_found, (part.route for part in fresh))
    else:
        read, route_found = {}, {}
        _add(read, route_found, model.routes)
    return ModelFindings(
        frame=frame,
        secrets=secrets,
        frame_found=frame_found,
        routes=cells.routes,
        read=read,
        route_found=route_found,
    )


def _frame_part(model: GatewayModel) -> tuple[frozenset[ObjectKey], tuple[Diagnostic, ...]]:
    """The Secrets and ConfigMaps the passes before the routes' read, and their findings."""
    secrets: set[ObjectKey] = set()
    for verdicts in model.listeners.values():
        for verdict in verdicts:
            secrets |= verdict.read  # certificate Secrets, CA Secrets and ConfigMaps
    for refs in model.gateway_refs.values():
        secrets |= refs.read  # the backend client certificate's Secret
    found = (
        *(d for c in model.classes for d in c.diagnostics),
        *(d for g in (*model.gateways, *model.unserved) for d in g.diagnostics),
        *(d for s in model.listener_sets for d in s.listener_set.diagnostics),
        *(d for p in model.placements.values() for layer in p.layers for d in layer.diagnostics),
        *frame_diagnostics(model),
    )
    return frozenset(secrets), found


def _add(
    read: dict[ObjectKey, int],
    route_found: dict[int, tuple[RouteVerdict, tuple[Diagnostic, ...]]],
    routes: Iterable[RouteVerdict],
) -> None:
    """``routes``' reads and findings added to ``read`` and ``route_found``."""
    for route in routes:
        for key in route.compiled.read:
            read[key] = read.get(key, 0) + 1
        found = (*route.compiled.route.diagnostics, *route_diagnostics(route))
        if found:
            route_found[id(route)] = (route, found)
