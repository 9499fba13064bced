"""ReferenceGrant checks, in one place (Gateway API: ReferenceGrant, GEP-709).

Rule: a reference from an object in namespace A to an object in namespace B is allowed when A
equals B, or when a ReferenceGrant in B lists the referring (group, kind, namespace A) in
``from`` and the referred (group, kind, and name or any name) in ``to``. Grants of v1 and
v1beta1 are equivalent; both decode to the same type.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coxswain.compile.model.state import ClusterState

__all__ = ["Grants", "index_grants"]


@dataclass(frozen=True, slots=True)
class Grants:
    """Grants by target namespace: (from group, kind, ns, to group, kind) → names (None = all)."""

    by_namespace: dict[str, dict[tuple[str, str, str, str, str], set[str | None]]]

    def allows(
        self,
        *,
        source: tuple[str, str, str],
        target: tuple[str, str, str, str],
    ) -> bool:
        """Whether ``source`` (group, kind, namespace) may refer to ``target`` (group, kind,
        namespace, name)."""
        group, kind, namespace = source
        to_group, to_kind, to_namespace, to_name = target
        if namespace == to_namespace:
            return True
        names = self.by_namespace.get(to_namespace, {}).get(
            (group, kind, namespace, to_group, to_kind)
        )
        return names is not None and (None in names or to_name in names)


def index_grants(state: ClusterState) -> Grants:
    """Index every ReferenceGrant. Pure."""
    by_namespace: dict[str, dict[tuple[str, str, str, str, str], set[str | None]]] = defaultdict(
        lambda: defaultdict(set)
    )
    for key, grant in state.reference_grants.items():
        for group, kind, namespace in grant.sources:
            for to_group, to_kind, to_name in grant.targets:
                by_namespace[key.namespace][(group, kind, namespace, to_group, to_kind)].add(
                    to_name
                )
    return Grants({ns: dict(table) for ns, table in by_namespace.items()})
