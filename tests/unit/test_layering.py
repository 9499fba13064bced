"""Layering: the pure core imports nothing impure and nothing from the layers above it.

An AST scan of every module under ``coxswain/compile`` and ``coxswain/route``
(docs/architecture.md, "Rules of the core"): imports anywhere in a module count (top level,
inside functions, under ``TYPE_CHECKING``), in both ``import x`` and ``from x import y`` forms,
relative imports resolved. import-linter checks the same contracts in ``make lint``; this test
keeps them in ``pytest`` and adds the standard library modules that would let the core reach
I/O, the clock or the process.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ("coxswain.compile", "coxswain.route")

IMPURE = (
    "trio",
    "grpc",
    "h11",
    "httptools",
    "kubernetes",
    "logging",
    "time",
    "os",
    "socket",
    "random",
    "threading",
    "subprocess",
    "asyncio",
    "urllib",
    "secrets",
    "tempfile",
    "shutil",
    "sys",
    "io",
    "pathlib",
    "importlib",  # a dynamic import would hide everything else from this scan
)
UPPER_LAYERS = ("coxswain.shell", "coxswain.cli")


def forbidden_for(module: str) -> tuple[str, ...]:
    """The module prefixes ``module`` must not import."""
    forbidden = IMPURE + UPPER_LAYERS
    if module == "coxswain.compile" or module.startswith("coxswain.compile."):
        forbidden += ("coxswain.route",)
    return forbidden


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, dotted name) of everything a module imports, relative imports made absolute."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - (node.level - 1)])
                base = f"{anchor}.{base}" if base else anchor
            found.append((node.lineno, base))
            # ``from coxswain import shell`` imports the module coxswain.shell.
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
        ):
            found.append((node.lineno, "importlib"))
    return found


def violations(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """Every forbidden import in ``source``, the text of module ``module``."""
    tree = ast.parse(source)
    forbidden = forbidden_for(module)
    return [
        f"{module}:{line} imports {name}"
        for line, name in _imported_names(tree, module, is_package)
        if any(_within(name, prefix) for prefix in forbidden)
    ]


def pure_modules() -> list[tuple[str, Path]]:
    found = []
    for package in PURE_PACKAGES:
        root = REPO.joinpath(*package.split("."))
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found.append((name, path))
    return found


MODULES = pure_modules()


def test_the_scan_finds_the_modules_of_both_pure_packages():
    names = {name for name, _ in MODULES}
    assert {"coxswain.compile", "coxswain.compile.api", "coxswain.route.select"} <= names
    assert {"coxswain.compile.model.decode", "coxswain.route.paths"} <= names


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_pure_module_imports_nothing_impure_and_no_upper_layer(module, path):
    source = path.read_text(encoding="utf-8")
    assert violations(source, module, is_package=path.name == "__init__.py") == []


# --- the checker itself can fail ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "module", "culprit"),
    [
        ("import os\n", "coxswain.compile.api", "os"),
        ("import os.path as p\n", "coxswain.route.select", "os.path"),
        ("from time import monotonic\n", "coxswain.compile.api", "time"),
        ("from urllib.parse import quote\n", "coxswain.route.paths", "urllib.parse"),
        ("def f():\n    import random\n    return random.random()\n", "coxswain.route.x", "random"),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import logging\n",
            "coxswain.compile.x",
            "logging",
        ),
        ("class A:\n    def m(self):\n        from sys import argv\n", "coxswain.compile.x", "sys"),
        ("import trio, h11\n", "coxswain.route.x", "trio"),
        ("import kubernetes.client\n", "coxswain.compile.x", "kubernetes.client"),
        ("from coxswain.shell.sources import read_manifests\n", "coxswain.route.x", "shell"),
        ("from coxswain import shell\n", "coxswain.compile.x", "coxswain.shell"),
        ("import coxswain.cli\n", "coxswain.route.select", "coxswain.cli"),
        ("from coxswain.route import select\n", "coxswain.compile.api", "coxswain.route"),
        ("from ..route.paths import split_target\n", "coxswain.compile.api", "coxswain.route"),
        ("from ...shell import sources\n", "coxswain.compile.model.decode", "coxswain.shell"),
        ("from .. import cli\n", "coxswain.route.select", "coxswain.cli"),
        ("from . import shell\n", "coxswain", "coxswain.shell"),
        ("m = __import__('os')\n", "coxswain.route.x", "importlib"),
        ("import importlib\n", "coxswain.compile.x", "importlib"),
    ],
)
def test_checker_reports_a_forbidden_import_when_source_has_one(source, module, culprit):
    is_package = module == "coxswain"
    found = violations(source, module, is_package=is_package)
    assert found, source
    assert any(culprit in v for v in found), found


@pytest.mark.parametrize(
    ("source", "module"),
    [
        ("from coxswain.compile.snapshot import Snapshot\n", "coxswain.route.table"),
        ("from ...compile import build_state\n", "coxswain.route.sub.x"),
        ("from .paths import split_target\n", "coxswain.route.select"),
        ("import typing\nimport ostrich\nimport timeit_like\n", "coxswain.compile.x"),
        ("from datetime import UTC, datetime\nimport hashlib, json, re\n", "coxswain.compile.x"),
        ("from collections.abc import Mapping\n", "coxswain.compile.x"),
    ],
)
def test_checker_accepts_an_import_when_it_is_allowed(source, module):
    assert violations(source, module) == []
