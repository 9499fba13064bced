"""Route regular expressions: RE2 syntax, full-match semantics, time linear in the input.

Gateway API v1 (``HTTPPathMatch``, ``HTTPHeaderMatch``, ``HTTPQueryParamMatch``): the
``RegularExpression`` dialect is implementation-specific. Ours is RE2's
(docs/architecture.md, "Rules of the core": nothing super-linear on input a client or tenant
controls): a tenant's pattern runs on every request of the shared pool, and a backtracking
engine lets one pattern stall every other tenant (``/(a+)+$`` doubles its time per path byte).
RE2 matches in time linear in the text whatever the pattern, so patterns it cannot express in
that time (backreferences, lookaround) are refused when the route is compiled.

Rules:
1. A pattern matches only the whole value (anchored at both ends, as Envoy's ``safe_regex``):
   ``/a`` does not match ``/ab``, and ``$`` never matches before a trailing newline.
2. A pattern longer than ``MAX_PATTERN_LENGTH`` characters, or whose program needs more than
   ``MAX_PROGRAM_MEMORY`` bytes, is refused, as is one RE2 cannot parse; ``compile_pattern``
   says why, for the diagnostic of the field.
3. Matching is case-sensitive and works on code points: the text is encoded as UTF-8 for RE2,
   so ``.`` matches one character whatever its code. A lone surrogate in the text goes through
   as its three bytes (``surrogatepass``): matching never raises.
4. The compiler validates with ``compile_pattern`` and the proxy matches with its result, so a
   pattern that compiles is exactly one that runs.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import re2

__all__ = [
    "MAX_PATTERN_LENGTH",
    "MAX_PROGRAM_MEMORY",
    "FullMatch",
    "PrefixMatch",
    "compile_pattern",
    "compile_prefix_pattern",
]

MAX_PATTERN_LENGTH: Final = 1024
"""Characters; the Gateway API's own limit on a path value (HTTPPathMatch ``value``)."""

MAX_PROGRAM_MEMORY: Final = 1 << 20
"""Bytes of RE2 program and DFA cache per pattern (RE2's ``max_mem``; its default is 8 MiB)."""


class _Program(Protocol):
    """What we use of a compiled RE2 program (the binding ships no type information)."""

    def fullmatch(self, text: bytes) -> object | None: ...


class _Groups(Protocol):
    def groups(self) -> tuple[bytes | None, ...]: ...


class _CapturingProgram(Protocol):
    groups: int

    def match(self, text: bytes) -> _Groups | None: ...


class FullMatch:
    """A compiled pattern that matches whole values."""

    __slots__ = ("_program", "pattern")

    def __init__(self, pattern: str, program: _Program) -> None:
        self.pattern = pattern
        self._program = program

    def matches(self, text: str) -> bool:
        """Whether ``text`` as a whole matches, in time linear in ``len(text)``."""
        encoded = text.encode("utf-8", "surrogatepass")
        return self._program.fullmatch(encoded) is not None

    def __repr__(self) -> str:
        return f"FullMatch({self.pattern!r})"


class PrefixMatch:
    """A compiled Ingress regex path: it matches from the start of the path, not necessarily
    to its end, case-insensitively, and gives its capture groups (ingress-nginx's
    ``location ~* "^path"`` and ``rewrite "(?i)path" target``,
    docs/migrating-from-ingress-nginx.md). Rules 2 to 4 of the module docstring hold; rule 1
    and the case rule do not."""

    __slots__ = ("_program", "groups", "pattern")

    def __init__(self, pattern: str, program: _CapturingProgram) -> None:
        self.pattern = pattern
        self.groups = program.groups
        self._program = program

    def captures(self, text: str) -> tuple[str, ...] | None:
        """None when ``text`` does not start with a match; else the groups' texts ("" for a
        group that took no part), in time linear in ``len(text)``."""
        found = self._program.match(text.encode("utf-8", "surrogatepass"))
        if found is None:
            return None
        return tuple(
            "" if g is None else g.decode("utf-8", "surrogatepass") for g in found.groups()
        )

    def __repr__(self) -> str:
        return f"PrefixMatch({self.pattern!r})"


def compile_pattern(pattern: str) -> FullMatch | str:
    """The compiled pattern, or why it is refused (one phrase, for a diagnostic). Pure."""
    program = _compile(pattern, capture=False)
    return program if isinstance(program, str) else FullMatch(pattern, program)


def compile_prefix_pattern(pattern: str) -> PrefixMatch | str:
    """An Ingress regex path compiled (:class:`PrefixMatch`), or why it is refused. Pure."""
    program = _compile(pattern, capture=True)
    return program if isinstance(program, str) else PrefixMatch(pattern, program)


def _compile(pattern: str, *, capture: bool) -> Any:
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"longer than {MAX_PATTERN_LENGTH} characters"
    try:
        encoded = pattern.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid Unicode text"
    try:
        return re2.compile(encoded, _options(capture=capture))
    except re2.error as err:
        return _reason(err)


def _options(*, capture: bool) -> object:
    """RE2's options, made afresh for each pattern (they are a mutable object): a route match
    is case-sensitive and tracks no groups (only whether it matches counts); an Ingress regex
    path is case-insensitive and gives its groups."""
    options = re2.Options()
    options.max_mem = MAX_PROGRAM_MEMORY
    options.log_errors = False  # RE2 logs to stderr otherwise: the core does no I/O
    options.never_capture = not capture
    options.case_sensitive = not capture
    return options


def _reason(err: Exception) -> str:
    """RE2's message (bytes in the binding) as text: ``RE2: missing ]: [0-9``."""
    detail = err.args[0] if err.args else ""
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    return f"RE2: {detail}" if detail else "RE2 refuses it"
