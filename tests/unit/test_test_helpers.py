"""Helpers shared between test modules live in helper modules, never in a ``test_*.py``: a
test module imported by another runs its module-level setup twice and couples two suites
(docs/architecture.md, "Tests")."""

from __future__ import annotations

import ast
from pathlib import Path

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
