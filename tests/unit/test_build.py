"""The optional native build (setup.py, build_backend/): what it asks pip for, and that what it
compiles can be type-checked with only that.

The build itself (mypyc, a C compiler) runs in tests/compiled.py, after the suite.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from coxswain.http1.codec import NATIVE_MODULES
from coxswain.http2 import NATIVE_MODULES as HTTP2_NATIVE_MODULES

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


def _module_file(name: str) -> Path | None:
    """The source of module ``coxswain.…`` ``name``, if it is one."""
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path, name: str) -> set[str]:
    """Every module name ``path`` (module ``name``) imports, type-checking imports included
    (mypy reads those too), with ``from X import Y`` also giving ``X.Y``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _read_by_mypy() -> dict[str, set[str]]:
    """The project modules mypy reads to compile setup.py's modules (those, their parent
    packages, and what they import, transitively): module name → the names it imports."""
    todo = [path.removesuffix(".py").replace("/", ".") for path in _compiled_paths()]
    read: dict[str, set[str]] = {}
    while todo:
        name = todo.pop()
        path = _module_file(name)
        if name in read or path is None:
            continue
        read[name] = _imports(path, name)
        parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
        todo.extend([*parents, *(n for n in read[name] if n.startswith("coxswain."))])
    return read


def test_the_plain_build_asks_for_nothing_more_than_setuptools(
    backend: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # setuptools answers by running setup.py from here
    monkeypatch.delenv("COXSWAIN_MYPYC", raising=False)
    for hook in (backend.get_requires_for_build_wheel, backend.get_requires_for_build_editable):
        assert not any(r.startswith("mypy") for r in hook(None))
    static = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert not any(r.startswith("mypy") for r in static["build-system"]["requires"])


def test_the_native_build_asks_for_the_mypy_the_tests_compile_with(
    backend: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tests/compiled.py builds with the venv's mypy: the test extra pins the same one."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COXSWAIN_MYPYC", "1")
    requires = backend.get_requires_for_build_wheel(None)
    pinned = [r for r in requires if r.startswith("mypy=")]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    test_extra = [r for r in project["optional-dependencies"]["test"] if r.startswith("mypy=")]
    assert pinned == test_extra
    assert pinned[0].startswith("mypy==")


def test_a_native_editable_install_is_refused(
    backend: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COXSWAIN_MYPYC", "1")
    with pytest.raises(RuntimeError, match="wheels only"):
        backend.get_requires_for_build_editable(None)


def test_what_mypyc_reads_imports_only_what_the_native_build_installs(
    backend: ModuleType,
) -> None:
    """mypyc type-checks what it compiles, and what that imports, in pip's isolated build
    environment, where only build_backend's requirements are installed: an import of anything
    else there (trio, say) would fail the image's build, not this suite."""
    installed = {r.split(">")[0].split("=")[0].lower() for r in backend.NATIVE_REQUIRES}
    read = _read_by_mypy()
    assert "coxswain.http1.codec" in read, "the package's __init__ is read"
    for module, names in sorted(read.items()):
        for name in names:
            top = name.split(".")[0]
            allowed = top in sys.stdlib_module_names or top in installed or top == "coxswain"
            assert allowed, f"{module} imports {name}, which the native build does not install"


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


def test_the_build_reported_is_that_of_every_compiled_module() -> None:
    modules = (*NATIVE_MODULES, *HTTP2_NATIVE_MODULES)
    reported = {module.__name__.replace(".", "/") + ".py" for module in modules}
    assert reported == set(_compiled_paths())


def test_no_native_module_lies_in_the_source_tree() -> None:
    """One there would be imported instead of its source, and shadow every edit of it."""
    assert sorted(str(p.relative_to(ROOT)) for p in (ROOT / "coxswain").rglob("*.so")) == []
