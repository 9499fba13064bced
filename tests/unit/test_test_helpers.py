"""Helpers shared between test modules live in helper modules, never in a ``test_*.py``: a
test module imported by another runs its module-level setup twice and couples two suites
(docs/architecture.md, "Tests")."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.integration.proxy_harness import free_port

TESTS = Path(__file__).resolve().parents[1]


def _imported(tree: ast.Module, module: Path) -> set[str]:
    """The last component of every module ``tree`` imports, relative imports included."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.rsplit(".", 1)[-1] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                found.add(node.module.rsplit(".", 1)[-1])
            else:  # from . import x
                found.update(alias.name for alias in node.names)
    return found - {module.stem}


def test_no_test_module_imports_another() -> None:
    offenders = []
    for module in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(module.read_text(), str(module))
        for name in sorted(_imported(tree, module)):
            if name.startswith("test_"):
                offenders.append(f"{module.relative_to(TESTS.parent)} imports {name}")
    assert offenders == []


def test_free_ports_are_never_handed_out_twice() -> None:
    """Tests draw several ports before anything binds them; a repeat would make two listeners
    of one test collide (EADDRINUSE). 500 draws from 20,000 ports repeat with probability
    above 99 % if nothing prevents it."""
    drawn = [free_port() for _ in range(500)]
    assert len(set(drawn)) == len(drawn)
