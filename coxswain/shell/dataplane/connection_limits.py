"""The bounds on a proxy process's connections (:mod:`.capacity`), apart from trio so that the
command line can show them without importing the data plane."""

from __future__ import annotations

from typing import Final

__all__ = ["ADMIN_MAX_CONNECTIONS", "ADMIN_TIMEOUT", "DEFAULT_MAX_CONNECTIONS", "FD_RESERVE"]

DEFAULT_MAX_CONNECTIONS: Final = 16384
"""Client connections per process (``--max-connections``): ingress-nginx's default
``max-worker-connections``."""

ADMIN_MAX_CONNECTIONS: Final = 64
"""Admin connections at once (:mod:`.admin`); more wait in the backlog."""

ADMIN_TIMEOUT: Final = 10.0
"""For a whole admin exchange: a probe's own timeout is shorter (the kubelet's default is 1 s)."""

FD_RESERVE: Final = 256
"""Descriptors kept out of the client connections' budget: the listeners, the admin port's
connections, the upstream pool's idle connections, the logs."""
