"""Scopes: which slice of the routing world one proxy receives (docs/contracts.md,
"The snapshot JSON").

- ``SharedPool``: every owned Ingress and every Gateway the shared pool serves (shared ones, and
  dedicated ones whose own proxy is not ready yet), each Gateway on its internal ports.
- ``GatewayScope``: one dedicated Gateway's slice only, its listeners on their spec ports, with
  an empty Ingress table and nothing of any other Gateway.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GatewayScope", "Scope", "SharedPool", "parse_scope"]


@dataclass(frozen=True, slots=True)
class SharedPool:
    """The shared pool's scope; written ``shared`` in the JSON form and on the command line."""

    def __str__(self) -> str:
        return "shared"


@dataclass(frozen=True, slots=True)
class GatewayScope:
    """One dedicated Gateway's scope; written ``namespace/name``."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


Scope = SharedPool | GatewayScope


def parse_scope(text: str) -> Scope | None:
    """``shared`` or ``namespace/name``; None when the text is neither."""
    if text == "shared":
        return SharedPool()
    namespace, slash, name = text.partition("/")
    if slash and namespace and name and "/" not in name:
        return GatewayScope(namespace, name)
    return None
