"""The pure routing compiler: cluster state in, one scope's snapshot and diagnostics out.

Nothing in this package performs I/O, reads the clock, the environment or randomness, or logs:
the layering test (``tests/unit/test_layering.py``) and import-linter enforce it.
"""

from coxswain.compile.api import CompileResult, analyse, compile, status
from coxswain.compile.config import CompileConfig
from coxswain.compile.model.state import ClusterState, build_state
from coxswain.compile.scope import Scope, SharedPool
from coxswain.compile.snapshot import Snapshot

__all__ = [
    "ClusterState",
    "CompileConfig",
    "CompileResult",
    "Scope",
    "SharedPool",
    "Snapshot",
    "analyse",
    "build_state",
    "compile",
    "status",
]
