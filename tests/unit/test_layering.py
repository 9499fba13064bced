"""Layering: the pure core imports nothing impure and nothing from the layers above it, and no
module of coxswain/ is in an import cycle.

An AST scan of every module under ``coxswain/compile``, ``coxswain/route`` and ``coxswain/http1``
(docs/architecture.md, "Layout"): imports anywhere in a module count (top level, inside
functions, under ``TYPE_CHECKING``), in both ``import x`` and ``from x import y`` forms, relative
imports resolved.
import-linter checks the same contracts in ``make lint``; this test keeps them in ``pytest`` and
adds the standard library modules that would let the core reach I/O, the clock or the process.

The same scan over all of coxswain/ gives the import graph the cycle test walks: an edge for
every module a module names, a package's ``__init__`` included when a module of the package
imports from it (``from coxswain.http1 import body`` inside ``coxswain/http1/codec.py`` runs the
``__init__``, which imports ``codec``). A cycle is reported as the modules it goes through.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ("coxswain.compile", "coxswain.route", "coxswain.http1")

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


# The codec's own: its two head parsers, and the file suffixes of native modules (codec_build
# tells a mypyc build from an interpreted one by them).
HTTP1_ALLOWED = ("h11", "httptools", "importlib.machinery")

# Names any pure module may take from a forbidden module, by ``from module import name``:
# ``sys.intern`` hands back an equal string, the one object every copy shares (the model's
# decoder keeps the strings it holds interned), and reaches nothing else of the process.
PURE_NAMES = ("sys.intern",)


def forbidden_for(module: str) -> tuple[str, ...]:
    """The module prefixes ``module`` must not import."""
    forbidden = IMPURE + UPPER_LAYERS
    if _within(module, "coxswain.compile"):
        forbidden += ("coxswain.route", "coxswain.http1")
    elif _within(module, "coxswain.route"):
        forbidden += ("coxswain.http1",)
    elif _within(module, "coxswain.http1"):
        forbidden += ("coxswain.route",)
    return forbidden


def allowed_for(module: str) -> tuple[str, ...]:
    """The module prefixes ``module`` may import although a forbidden prefix covers them."""
    return HTTP1_ALLOWED if _within(module, "coxswain.http1") else ()


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
    allowed = allowed_for(module)
    names = _imported_names(tree, module, is_package)
    # ``from sys import intern`` also names ``sys``, the module it runs: not a violation when
    # the names it takes are pure ones (any other name on its line still is).
    taken_from = {(line, name.rpartition(".")[0]) for line, name in names if name in PURE_NAMES}
    return [
        f"{module}:{line} imports {name}"
        for line, name in names
        if any(_within(name, prefix) for prefix in forbidden)
        and not any(_within(name, prefix) for prefix in allowed)
        and name not in PURE_NAMES
        and (line, name) not in taken_from
    ]


def modules_under(top: Path, package: str) -> list[tuple[str, Path]]:
    """(dotted name, path) of every module of ``package``, whose folder is under ``top``."""
    found = []
    for path in sorted(top.joinpath(*package.split(".")).rglob("*.py")):
        parts = path.relative_to(top).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append((name, path))
    return found


def pure_modules() -> list[tuple[str, Path]]:
    return [found for package in PURE_PACKAGES for found in modules_under(REPO, package)]


MODULES = pure_modules()


def test_the_scan_finds_the_modules_of_both_pure_packages():
    names = {name for name, _ in MODULES}
    assert {"coxswain.compile", "coxswain.compile.api", "coxswain.route.select"} <= names
    assert {"coxswain.compile.model.decode", "coxswain.route.paths"} <= names
    assert {"coxswain.http1", "coxswain.http1.parser", "coxswain.http1.codec"} <= names


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_pure_module_imports_nothing_impure_and_no_upper_layer(module, path):
    source = path.read_text(encoding="utf-8")
    assert violations(source, module, is_package=path.name == "__init__.py") == []


# --- no import cycle ----------------------------------------------------------------------------


def import_graph(top: Path, package: str) -> dict[str, set[str]]:
    """Module → the modules of ``package`` it imports (:func:`_imported_names`: every form,
    ``TYPE_CHECKING`` included), each name resolved to the module that holds it."""
    found = modules_under(top, package)
    names = {name for name, _ in found}

    def module_of(name: str) -> str | None:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in found:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = _imported_names(tree, name, path.name == "__init__.py")
        targets = {module_of(target) for _, target in imported}
        graph[name] = {target for target in targets if target is not None and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected part of ``graph`` with more than one module,
    as the modules it goes through, the first repeated at the end."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    parts: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            part = [stack.pop()]
            while part[-1] != module:
                part.append(stack.pop())
            if len(part) > 1:
                parts.append(sorted(part))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return [_cycle_through(graph, set(part), part[0]) for part in parts]


def _cycle_through(graph: dict[str, set[str]], part: set[str], start: str) -> list[str]:
    """The shortest path from ``start`` back to it inside ``part`` (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for imported in sorted(graph[module] & part):
                if imported == start:
                    path = [module]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if imported not in came_from:
                    came_from[imported] = module
                    following.append(imported)
        frontier = following
    raise AssertionError(f"{start} is in no cycle of {sorted(part)}")


def test_no_module_of_coxswain_is_in_an_import_cycle():
    graph = import_graph(REPO, "coxswain")
    assert {"coxswain.cli", "coxswain.shell.proxy", "coxswain.http1.codec"} <= graph.keys()
    assert "coxswain.http1.body" in graph["coxswain.http1.codec"], "the scan sees the imports"
    found = [" -> ".join(cycle) for cycle in cycles(graph)]
    assert found == [], "import cycles:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("files", "cycle"),
    [
        (
            {"a.py": "from pkg import b\n", "b.py": "import pkg.a\n"},
            ["pkg.a", "pkg.b", "pkg.a"],
        ),
        (
            {
                "a.py": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from .b import B\n",
                "b.py": "def f():\n    from pkg.c import C\n",
                "c.py": "from pkg.a import A\n",
            },
            ["pkg.a", "pkg.b", "pkg.c", "pkg.a"],
        ),
        (
            {
                "__init__.py": "from pkg.sub.codec import build\n",
                "sub/codec.py": "from pkg import x\n",
            },
            ["pkg", "pkg.sub.codec", "pkg"],
        ),
        (
            {
                "sub/__init__.py": "from .codec import build\n",
                "sub/codec.py": "from . import body\n",
            },
            ["pkg.sub", "pkg.sub.codec", "pkg.sub"],
        ),
    ],
    ids=["mutual", "type-checking-and-function-imports", "package-init", "relative-init"],
)
def test_cycle_check_names_the_cycle_when_source_has_one(tmp_path, files, cycle):
    for name, source in {"__init__.py": "", **files}.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    assert cycles(import_graph(tmp_path, "pkg")) == [cycle]


def test_cycle_check_accepts_imports_that_only_go_one_way(tmp_path):
    files = {
        "__init__.py": "from pkg.a import A\n",
        "a.py": "import pkg.b\nfrom pkg.sub.c import C\n",
        "b.py": "from .sub import c\n",
        "sub/__init__.py": "",
        "sub/c.py": "import os\nimport pkg.sub.d\n",  # a submodule: no edge to pkg/__init__
        "sub/d.py": "",
    }
    for name, source in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    assert cycles(import_graph(tmp_path, "pkg")) == []


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
        ("from sys import intern, argv\n", "coxswain.compile.x", "sys.argv"),
        ("import sys\n", "coxswain.compile.x", "sys"),
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
        ("import h11\n", "coxswain.route.x", "h11"),
        ("import trio\n", "coxswain.http1.parser", "trio"),
        ("import importlib\n", "coxswain.http1.codec", "importlib"),
        ("from coxswain.route import select\n", "coxswain.http1.codec", "coxswain.route"),
        ("from coxswain.http1 import codec_named\n", "coxswain.route.x", "coxswain.http1"),
        ("from coxswain.http1.events import Data\n", "coxswain.compile.x", "coxswain.http1"),
        ("from coxswain.shell.dataplane import wire\n", "coxswain.http1.body", "coxswain.shell"),
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
        ("import h11\n", "coxswain.http1.h11_codec"),
        ("import httptools\n", "coxswain.http1.llhttp_codec"),
        ("from importlib.machinery import EXTENSION_SUFFIXES\n", "coxswain.http1.codec"),
        ("from coxswain.compile.snapshot import Snapshot\n", "coxswain.http1.x"),
        ("from sys import intern\n", "coxswain.compile.model.decode"),
    ],
)
def test_checker_accepts_an_import_when_it_is_allowed(source, module):
    assert violations(source, module) == []
