"""From one cluster state to every scope's snapshot: the step ``serve`` and the controller share.

Each state is compiled once per scope it asks for (the shared pool, and each dedicated Gateway
that some proxy identity is granted, ``compile.grants``); the grants are kept so that the
discovery server's policy (``discovery.granted_by(lambda: publisher.grants)``) follows the
latest state. Diagnostics are
logged when they first appear, with the ``file:line`` of their object when the state came from
files, so that an edit that breaks one route says so once, not at every recompile.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyrsistent import pmap

from coxswain.compile import CompileConfig, build_state, compile
from coxswain.compile.diagnostics import Severity, diagnostic_order
from coxswain.compile.grants import subscription_grants
from coxswain.compile.scope import SharedPool
from coxswain.shell.sources import located

if TYPE_CHECKING:
    from pyrsistent.typing import PMap

    from coxswain.compile import ClusterState, Scope, Snapshot
    from coxswain.compile.gateway.model import GatewayModel
    from coxswain.compile.model.manifests import SourcedBody

__all__ = ["Publisher"]

log = logging.getLogger("coxswain.compile")


class Publisher:
    """Compiles states into per-scope snapshots and remembers who may subscribe to what."""

    def __init__(self, config: CompileConfig) -> None:
        self.config = config
        self.grants: PMap[tuple[str, str], Scope] = subscription_grants(build_state([]), config)
        self._reported: frozenset[str] = frozenset()

    def compile(
        self,
        state: ClusterState,
        bodies: list[SourcedBody] | None = None,
        model: GatewayModel | None = None,
    ) -> PMap[Scope, Snapshot]:
        """Every scope's snapshot of ``state``; new diagnostics are logged (``bodies`` give
        them a file and line). ``model``: ``compile.analyse(state, config)``, if at hand."""
        grants = subscription_grants(state, self.config, model)
        results = {
            scope: compile(state, scope, self.config)
            for scope in sorted({SharedPool(), *grants.values()}, key=str)
        }
        self.grants = grants
        findings = sorted(
            {d for result in results.values() for d in result.diagnostics}, key=diagnostic_order
        )
        lines = dict(zip(findings, located(findings, bodies or []), strict=True))
        for diagnostic, line in lines.items():
            if line not in self._reported:
                level = logging.ERROR if diagnostic.severity is Severity.ERROR else logging.WARNING
                log.log(level, "%s", line)
        self._reported = frozenset(lines.values())
        return pmap({scope: result.snapshot for scope, result in results.items()})
