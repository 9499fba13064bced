"""A ``ServiceIndex`` and ``Grants`` that record the questions a route's compile asked.

Why: docs/architecture.md, "The pure core" (``compile.memo``): a compiled route is reused while
every answer its compile read is the same, and recording the questions as they are asked makes
that record complete by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coxswain.compile.backends import ServiceIndex
from coxswain.compile.gateway.refgrants import Grants

if TYPE_CHECKING:
    from coxswain.compile.model.objects import EndpointSlice, Service

__all__ = ["Read", "RecordedGrants", "RecordedServices"]

Read = tuple[str, str, str]
"""A ``ServiceIndex`` question: ``Service`` or ``EndpointSlice`` (a Service's slices), namespace,
Service name."""


@dataclass(frozen=True, slots=True)
class RecordedServices(ServiceIndex):
    """A ``ServiceIndex`` that records what it answered."""

    calls: set[Read] = field(default_factory=set)

    def service(self, namespace: str, name: str) -> Service | None:
        self.calls.add(("Service", namespace, name))
        return ServiceIndex.service(self, namespace, name)

    def slices(self, namespace: str, name: str) -> list[EndpointSlice]:
        self.calls.add(("EndpointSlice", namespace, name))
        return ServiceIndex.slices(self, namespace, name)


@dataclass(frozen=True, slots=True)
class RecordedGrants(Grants):
    """``Grants`` that record what they answered."""

    asked: list[bool] = field(default_factory=list)

    def allows(self, *, source: tuple[str, str, str], target: tuple[str, str, str, str]) -> bool:
        self.asked.append(True)
        return Grants.allows(self, source=source, target=target)
