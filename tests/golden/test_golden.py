"""Golden-file tests of the compiler (STYLE §9): case inputs in, snapshot and diagnostics out.

Each case is ``cases/<area>/<case>.in.yaml``: a ``CompileCase`` header document, then verbatim
Kubernetes objects. The runner loads it with the CLI's own loader (``parse_manifests``), prepends
the objects of the header's ``include`` files, compiles for the shared pool, and compares the
*text* of ``<case>.snapshot.yaml`` and, only when there are findings, ``<case>.diagnostics.yaml``.
``pytest tests/golden --update-goldens`` (``make goldens``) rewrites the expected files instead.

A case whose header says ``pending: <why>`` documents behaviour the compiler does not have yet
(a known bug): it has no expected files, is compiled (the compiler must not raise on it) and is
reported as xfail, so that no golden ever enshrines the bug.

Checks on the goldens themselves: every include exists and every ``_base`` file is included by
some case; every input survives parse → ``yaml.safe_dump`` → parse unchanged; no expected file
is left without its input.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from coxswain.cli import _diagnostic_data as cli_diagnostic_data
from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.manifests import ManifestSyntaxError, SourcedBody, parse_manifests
from coxswain.compile.snapshot_json import snapshot_to_data
from coxswain.shell.output import dump_yaml

pytestmark = pytest.mark.golden

CASES: Final = Path(__file__).parent / "cases"
BASE: Final = "_base"
INPUT: Final = ".in.yaml"
SNAPSHOT: Final = ".snapshot.yaml"
DIAGNOSTICS: Final = ".diagnostics.yaml"
HEADER_KIND: Final = "CompileCase"
HEADER_KEYS: Final = frozenset({"kind", "description", "scope", "include", "pending"})
SCOPES: Final = frozenset({"shared"})
REGENERATE: Final = "run `make goldens` (pytest tests/golden --update-goldens), review git diff"


@dataclass(frozen=True, slots=True)
class Case:
    """One parsed case file: its header and the objects it holds, includes first."""

    name: str
    path: Path
    description: str
    includes: tuple[str, ...]
    pending: str | None
    bodies: tuple[SourcedBody, ...]

    def expected(self, suffix: str) -> Path:
        return self.path.with_name(self.name + suffix)


def _case_paths() -> list[Path]:
    return sorted(p for p in CASES.glob(f"*/*{INPUT}") if p.parent.name != BASE)


def _base_paths() -> list[Path]:
    return sorted((CASES / BASE).glob("*.yaml"))


def _name(path: Path) -> str:
    return path.name.removesuffix(INPUT)


def _parse(path: Path) -> list[SourcedBody]:
    parsed = parse_manifests(path.read_text(encoding="utf-8"), str(path.relative_to(CASES)))
    if isinstance(parsed, ManifestSyntaxError):
        pytest.fail(f"syntax error: {parsed}")
    return parsed


def _is_base_file(include: str) -> bool:
    """Whether an include names an existing file directly under ``cases/_base/``."""
    return Path(include).parent == Path(BASE) and (CASES / include).is_file()


def _load_case(path: Path, *, resolve: bool = True) -> Case:
    """Parse a case file and (with ``resolve``) its includes; a bad header fails the test."""
    documents = _parse(path)
    where = path.relative_to(CASES)
    if not documents or not isinstance(header := documents[0].body, dict):
        pytest.fail(f"{where}: the first document must be a {HEADER_KIND} header")
    problems = []
    if header.get("kind") != HEADER_KIND:
        problems.append(f"kind must be {HEADER_KIND}")
    if unknown := sorted(set(header) - HEADER_KEYS):
        problems.append(f"unknown header keys {unknown}")
    description = header.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append("description is required")
    if header.get("scope", "shared") not in SCOPES:
        problems.append(f"scope must be one of {sorted(SCOPES)}")
    includes = header.get("include", [])
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        problems.append("include must be a list of paths relative to tests/golden/cases")
        includes = []
    pending = header.get("pending")
    if pending is not None and (not isinstance(pending, str) or not pending.strip()):
        problems.append("pending must say why, in a sentence")
    if problems:
        pytest.fail(f"{where}: bad header: {'; '.join(problems)}")
    bodies: list[SourcedBody] = []
    for include in includes if resolve else ():
        if not _is_base_file(include):
            pytest.fail(f"{where}: include {include!r} is not a file under {BASE}/")
        bodies.extend(_parse(CASES / include))
    bodies.extend(documents[1:])
    return Case(
        name=_name(path),
        path=path,
        description=str(description),
        includes=tuple(includes),
        pending=pending,
        bodies=tuple(bodies),
    )


def _diagnostic_data(d: Diagnostic) -> dict[str, Any]:
    """A finding as ``coxswain compile --emit diagnostics`` prints it (cli._diagnostic_data)."""
    return {
        "kind": d.key.kind if d.key else None,
        "namespace": d.key.namespace if d.key else None,
        "name": d.key.name if d.key else None,
        "field": d.field,
        "severity": str(d.severity),
        "reason": d.reason,
        "message": d.message,
    }


def _render(case: Case) -> dict[str, str | None]:
    """The expected-file texts of a case: suffix → text, or None when the file must not exist."""
    result = compile(build_state(b.body for b in case.bodies), SharedPool())
    diagnostics = [_diagnostic_data(d) for d in result.diagnostics]
    return {
        SNAPSHOT: dump_yaml(snapshot_to_data(result.snapshot)),
        DIAGNOSTICS: dump_yaml(diagnostics) if diagnostics else None,
    }


def _compare(path: Path, actual: str | None, *, update: bool) -> str | None:
    """Compare (or, with ``update``, rewrite) one expected file; returns a failure or None."""
    expected = path.read_text(encoding="utf-8") if path.exists() else None
    if expected == actual:
        return None
    if update:
        if actual is None:
            path.unlink()
        else:
            path.write_text(actual, encoding="utf-8")
        return None
    if actual is None:
        return f"{path.name} exists, but the compile produced nothing for it: delete it"
    if expected is None:
        return f"{path.name} is missing"
    diff = difflib.unified_diff(
        expected.splitlines(keepends=True),
        actual.splitlines(keepends=True),
        fromfile=f"expected/{path.name}",
        tofile=f"actual/{path.name}",
    )
    return f"{path.name} differs:\n{''.join(diff)}"


@pytest.mark.parametrize("path", _case_paths(), ids=_name)
def test_golden(path: Path, update_goldens: bool) -> None:
    case = _load_case(path)
    rendered = _render(case)
    if case.pending is not None:
        failures = [
            msg
            for suffix in rendered
            if (msg := _compare(case.expected(suffix), None, update=update_goldens))
        ]
        assert not failures, f"{case.name} is pending: it must have no expected files"
        pytest.xfail(f"pending: {case.pending}")
    failures = [
        msg
        for suffix, text in rendered.items()
        if (msg := _compare(case.expected(suffix), text, update=update_goldens))
    ]
    if failures:
        pytest.fail(f"{case.name}: {case.description}\n" + "\n".join(failures) + f"\n{REGENERATE}")


def test_case_names_are_unique_and_kebab_case() -> None:
    names = [_name(p) for p in _case_paths()]
    assert names, "no golden cases found"
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"case names must be unique across areas: {duplicates}"
    bad = [
        n
        for n, p in zip(names, _case_paths(), strict=True)
        if not n.startswith(f"{p.parent.name}-") or n != n.lower() or "_" in n or " " in n
    ]
    assert not bad, f"case names must be kebab-case <area>-<feature>-<variant>: {bad}"


def test_includes_exist_and_every_base_file_is_used() -> None:
    used: set[str] = set()
    missing: list[str] = []
    for path in _case_paths():
        case = _load_case(path, resolve=False)
        used.update(case.includes)
        missing.extend(f"{case.name}: {i}" for i in case.includes if not _is_base_file(i))
    unused = sorted(
        str(p.relative_to(CASES)) for p in _base_paths() if str(p.relative_to(CASES)) not in used
    )
    problems = [
        *(f"include that does not exist: {m}" for m in missing),
        *(f"{BASE} file no case includes (use it or delete it): {u}" for u in unused),
    ]
    assert not problems, "\n".join(problems)


def test_every_expected_file_has_its_input() -> None:
    orphans = []
    for path in sorted(CASES.glob("*/*.yaml")):
        if path.parent.name == BASE or path.name.endswith(INPUT):
            continue
        stem = next(
            (path.name.removesuffix(s) for s in (SNAPSHOT, DIAGNOSTICS) if path.name.endswith(s)),
            None,
        )
        if stem is None or not path.with_name(stem + INPUT).is_file():
            orphans.append(str(path.relative_to(CASES)))
    assert not orphans, f"files under cases/ that belong to no case: {orphans}"


@pytest.mark.parametrize(
    "path",
    [*_case_paths(), *_base_paths()],
    ids=lambda p: _name(p) if p.parent.name != BASE else f"{BASE}/{p.stem}",
)
def test_input_survives_dump_and_parse(path: Path) -> None:
    """Inputs are plain data: re-dumped and re-parsed they give equal bodies and an equal state."""
    bodies = [b.body for b in _parse(path)]
    reparsed = parse_manifests(yaml.safe_dump_all(bodies, sort_keys=True), "dumped")
    assert not isinstance(reparsed, ManifestSyntaxError), str(reparsed)
    again = [b.body for b in reparsed]
    assert again == bodies
    first = 0 if path.parent.name == BASE else 1  # a case's first document is its header
    assert build_state(again[first:]) == build_state(bodies[first:])


def test_diagnostic_fields_match_the_cli() -> None:
    finding = Diagnostic(
        key=ObjectKey("Ingress", "app", "web"),
        field="spec.rules[0].host",
        severity=Severity.ERROR,
        reason="InvalidHostname",
        message="m",
    )
    input_wide = Diagnostic(
        key=None, field="", severity=Severity.WARNING, reason="UnrecognisedKind", message="m"
    )
    for d in (finding, input_wide):
        assert _diagnostic_data(d) == cli_diagnostic_data(d)
