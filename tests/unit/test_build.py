"""The optional native build (setup.py, build_backend/): what it asks pip for, and that what it
compiles can be type-checked with only that.

The build itself (mypyc, a C compiler) runs in tests/compiled.py, after the suite.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def backend() -> ModuleType:
    return _load(ROOT / "build_backend" / "coxswain_build.py", "coxswain_build_under_test")


def _compiled_paths() -> list[str]:
    """setup.py's COMPILED, read without running setup()."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "COMPILED":
            paths = ast.literal_eval(node.value)
            assert isinstance(paths, list)
            return paths
    raise AssertionError("setup.py has no COMPILED list")


def test_the_plain_build_asks_for_nothing_more_than_setuptools(
    backend: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COXSWAIN_MYPYC", raising=False)
    for hook in (backend.get_requires_for_build_wheel, backend.get_requires_for_build_editable):
        assert not any(r.startswith("mypy") for r in hook(None))


def test_the_native_build_asks_for_a_pinned_mypy(
    backend: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COXSWAIN_MYPYC", "1")
    for hook in (backend.get_requires_for_build_wheel, backend.get_requires_for_build_editable):
        requires = hook(None)
        assert [r for r in requires if r.startswith("mypy")] == [backend._NATIVE[0]]
        assert backend._NATIVE[0].startswith("mypy==")


def test_the_compiled_modules_import_only_what_the_native_build_installs(
    backend: ModuleType,
) -> None:
    """mypyc type-checks what it compiles in pip's isolated build environment, where only
    build_backend's requirements are installed: an import of anything else (trio, say) in a
    compiled module would fail the image's build, not this suite's."""
    installed = {r.split(">")[0].split("=")[0].lower() for r in backend._NATIVE}
    paths = _compiled_paths()
    assert paths, "setup.py compiles nothing"
    for path in paths:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                allowed = (
                    top in sys.stdlib_module_names
                    or top in installed
                    or name.startswith("coxswain.shell.http1")
                )
                assert allowed, f"{path} imports {name}, which the native build does not install"


def test_the_compiled_modules_exist_and_are_synchronous() -> None:
    """setup.py's rule: mypyc's coroutines keep the handled exception differently from
    CPython's across an await, so nothing asynchronous is compiled."""
    for path in _compiled_paths():
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        asynchronous = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.AsyncFor | ast.AsyncWith)
        ]
        assert not asynchronous, f"{path} has async code at lines {asynchronous}"
