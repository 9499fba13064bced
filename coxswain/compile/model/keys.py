"""Identity of the objects the compiler reads.

Every object in a ``ClusterState`` is known by an ``ObjectKey``: its kind, namespace and name.
Cluster-scoped kinds (IngressClass, GatewayClass, Namespace) have the namespace ``""``. Keys order
by (kind, namespace, name), which is the canonical order of every listing the compiler emits.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ObjectKey"]


@dataclass(frozen=True, slots=True, order=True)
class ObjectKey:
    """``kind namespace/name``; the namespace is empty for cluster-scoped kinds."""

    kind: str
    namespace: str
    name: str

    @property
    def ref(self) -> str:
        """``namespace/name`` (or ``name`` alone when cluster-scoped), as kubectl prints it."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __str__(self) -> str:
        return f"{self.kind} {self.ref}"
