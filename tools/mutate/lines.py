"""Line-level test selection: a mutant runs only the tests that executed the statement it changes.

Why: mutmut 3.8.1 maps tests to mutants by function. A test that calls a function runs for
every mutant of it, even when it never reaches the mutated statement; and the goldens reach
nearly every function of ``compile/``, so a survivor there ran about a thousand tests: the
mutants of those functions cost a run twice what they cost by line (docs/quality.md, "Latest
result", the two selections side by side). A test that never executes the changed statement runs the
mutant exactly as it runs the original, so it cannot kill it: it is left out. PIT, the mutation
tool of the JVM, selects its tests the same way, by the lines each test covers.

How:

- the stats run (mutmut's one run of every selected test) runs under coverage.py, each test in
  its own dynamic context (its pytest node id), over the copies in ``mutants/``. Only the
  original of each function runs there (``…__mutmut_orig``: mutmut's trampolines call it when
  no mutant is active);
- a mutant's changed lines are found by diffing its function with the original (the spans
  index mutmut writes beside each mutated file, ``<file>.spans``), then widened to whole
  statements (``ast``): a statement over several lines reports one line or another to the
  tracer, and a compound statement's header is the lines before its first inner statement;
- the tests selected are those, among mutmut's (after the judges of pyproject.toml), that
  executed a line of those statements. When no test did, none runs: the mutant survives, as
  one no test reaches does. A change outside the function's body (its signature, whose
  defaults run at import) keeps mutmut's choice.

What it shares with mutmut's own map: lines run by a fixture of module or session scope, or
by a cache an earlier test filled, count for the test that ran them first.
"""

from __future__ import annotations

import ast
import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from coverage import CoverageData

ORIGINAL: Final = "__mutmut_orig"
MARK: Final = "__mutmut_"


def changed_offsets(original: Sequence[str], mutant: Sequence[str]) -> list[int]:
    """Offsets into ``original`` of the lines the mutant replaces or deletes; for an insertion,
    the lines either side of it. The two functions' names differ, so the first line of each
    (a ``def``, or the blank lines before it) is compared with its name taken out."""

    def plain(lines: Sequence[str]) -> list[str]:
        return [line.split(MARK)[0] if "def " in line and MARK in line else line for line in lines]

    matcher = difflib.SequenceMatcher(None, plain(original), plain(mutant), autojunk=False)
    offsets: list[int] = []
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        offsets.extend(range(i1, i2) if i2 > i1 else (i1 - 1, i1))
    return sorted({o for o in offsets if 0 <= o < len(original)})


def statement_lines(function: ast.FunctionDef | ast.AsyncFunctionDef, line: int) -> range | None:
    """The lines of the statement of ``function`` that holds ``line``: the innermost one, or
    a compound statement's header when the line is there. None when the line is not in the
    body (the signature, a decorator)."""
    if not function.body or line < function.body[0].lineno:
        return None
    body: list[ast.stmt] = function.body
    found: range | None = None
    while True:
        holder = next((s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if holder is None:
            return found
        inner = _children(holder)
        end = holder.end_lineno or holder.lineno
        if not inner:
            return range(holder.lineno, end + 1)
        first = min(s.lineno for s in inner)
        if line < first:
            return range(holder.lineno, first)
        found = range(holder.lineno, end + 1)  # an ``else:`` or ``except …:`` line, if no child
        body = inner


def _children(statement: ast.stmt) -> list[ast.stmt]:
    """The statements directly inside a compound statement, in every branch."""
    inner: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(statement, name, None)
        if isinstance(value, list):
            inner.extend(s for s in value if isinstance(s, ast.stmt))
    for handler in getattr(statement, "handlers", ()):
        inner.extend(handler.body)
    for case in getattr(statement, "cases", ()):
        inner.extend(case.body)
    return inner


@dataclass
class MutatedFile:
    """One file of ``mutants/``: its lines, its spans index, its functions by name."""

    lines: list[str]
    spans: dict[str, tuple[int, int]]
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]

    @classmethod
    def read(cls, path: Path) -> MutatedFile:
        text = path.read_text("utf-8")
        spans = json.loads(Path(str(path) + ".spans").read_text("utf-8"))["spans"]
        functions = {
            node.name: node
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and ORIGINAL in node.name
        }
        return cls(text.splitlines(), {k: (v[0], v[1]) for k, v in spans.items()}, functions)

    def original_lines(self, mutant: str) -> set[int] | None:
        """The lines of the original function (1-based) whose execution decides whether the
        mutant ``mutant`` (its function's name in the file) can differ; None when the change
        is outside the body."""
        original = mutant.rpartition(MARK)[0] + ORIGINAL
        if mutant not in self.spans or original not in self.spans:
            return None
        function = self.functions.get(original)
        if function is None:
            return None
        (o_start, o_end), (m_start, m_end) = self.spans[original], self.spans[mutant]
        offsets = changed_offsets(self.lines[o_start - 1 : o_end], self.lines[m_start - 1 : m_end])
        if not offsets:
            return None
        lines: set[int] = set()
        for offset in offsets:
            statement = statement_lines(function, o_start + offset)
            if statement is None:
                return None
            lines.update(statement)
        return lines


@dataclass
class LineIndex:
    """Which tests executed each line of each mutated file, from the stats run's coverage."""

    root: Path
    data: CoverageData | None = None
    _by_file: dict[str, dict[int, frozenset[str]]] = field(default_factory=dict)
    _files: dict[str, MutatedFile | None] = field(default_factory=dict)
    _measured: dict[str, str] = field(default_factory=dict)

    def take(self, data: CoverageData | None) -> None:
        """Hold a new run's coverage (None: forget it, and select by function again)."""
        self.data = data
        self._by_file.clear()
        self._measured = {}
        if data is not None:
            root = str(self.root.resolve()) + "/"
            self._measured = {
                name.removeprefix(root): name
                for name in data.measured_files()
                if name.startswith(root)
            }

    def _contexts(self, relative: str) -> dict[int, frozenset[str]]:
        if relative not in self._by_file:
            name = self._measured.get(relative)
            found: dict[int, Any] = self.data.contexts_by_lineno(name) if self.data and name else {}
            self._by_file[relative] = {
                line: frozenset(c for c in contexts if c) for line, contexts in found.items()
            }
        return self._by_file[relative]

    def _file(self, relative: str) -> MutatedFile | None:
        if relative not in self._files:
            path = self.root / relative
            self._files[relative] = MutatedFile.read(path) if path.exists() else None
        return self._files[relative]

    def select(self, module: str, function: str, tests: Iterable[str]) -> list[str]:
        """Of ``tests`` (mutmut's, for the mutant ``function`` of ``module``), those that
        executed a statement the mutant changes; ``tests`` whole when that is not known."""
        tests = list(tests)
        if self.data is None:
            return tests
        relative = self._relative(module)
        mutated = self._file(relative) if relative else None
        lines = mutated.original_lines(function) if mutated else None
        if relative is None or lines is None:
            return tests
        contexts = self._contexts(relative)
        ran: set[str] = set()
        for line in lines:
            ran.update(contexts.get(line, ()))
        return [test for test in tests if test in ran]

    def _relative(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for relative in (base + ".py", base + "/__init__.py"):
            if (self.root / relative).exists():
                return relative
        return None
