"""From one cluster state to every scope's snapshot: the step ``serve`` and the controller share.

Each state is compiled once per scope it asks for (the shared pool, and each dedicated Gateway
that some proxy identity is granted, ``compile.grants``), through the publisher's
``compile.memo.CompileMemo``: a scope nothing of which changed is reused, not compiled again
(``outcomes`` counts both). The grants are kept so that the
discovery server's policy (``discovery.granted_by(lambda: publisher.grants)``) follows the
latest state. Diagnostics are
logged when they first appear, with the ``file:line`` of their object when the state came from
files, so that an edit that breaks one route says so once, not at every recompile.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyrsistent import pmap

from coxswain.compile import CompileConfig, build_state
from coxswain.compile.diagnostics import Severity, diagnostic_order
from coxswain.compile.grants import subscription_grants
from coxswain.compile.memo import CompileMemo
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
        self.memo = CompileMemo()
        self.outcomes = (0, 0)  # scopes compiled and reused by the last ``compile``

    def compile(
        self,
        state: ClusterState,
        bodies: list[SourcedBody] | None = None,
        model: GatewayModel | None = None,
    ) -> PMap[Scope, Snapshot]:
        """Every scope's snapshot of ``state``; new diagnostics are logged (``bodies`` give
        them a file and line). ``model``: ``compile.analyse(state, config)``, if at hand.

        Runs in a worker thread (``shell.offload``) as well as on the loop: it touches only the
        publisher and its memo, which one caller uses at a time."""
        memo = self.memo
        if model is None:
            model = memo.analyse(state, self.config)
        grants = memo.grants(state, self.config, model)
        compiled, reused = memo.compiled, memo.reused
        results = {
            scope: memo.compile(state, scope, self.config)
            for scope in sorted({SharedPool(), *grants.values()}, key=str)
        }
        memo.forget(results)
        self.outcomes = (memo.compiled - compiled, memo.reused - reused)
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
