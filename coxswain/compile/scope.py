"""Scopes: which slice of the routing world one proxy receives (ARCHITECTURE §3).

``SharedPool`` is the shared proxy pool's scope: every owned Ingress and every shared Gateway.
Dedicated per-Gateway scopes arrive with the deployment models.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Scope", "SharedPool"]


@dataclass(frozen=True, slots=True)
class SharedPool:
    """The shared pool's scope; written ``shared`` in the JSON form and on the command line."""

    def __str__(self) -> str:
        return "shared"


Scope = SharedPool
