"""Reading manifest files: paths, directories (recursive) and standard input.

The I/O half of the loader; ``compile.model.manifests`` parses the text. Files are read in
sorted order so that messages come out in a stable order (the compile result does not depend on
it). A file that cannot be read or parsed stops the whole load: nothing is compiled from half an
input.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from coxswain.compile.model.manifests import (
    ManifestSyntaxError,
    Refused,
    SourcedBody,
    parse_manifests,
    stream_manifests,
)
from coxswain.compile.model.places import locate

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from coxswain.compile.diagnostics import Diagnostic

__all__ = [
    "MANIFEST_SUFFIXES",
    "LoadError",
    "located",
    "read_file",
    "read_manifests",
    "stream_bodies",
]

MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")


class LoadError(Exception):
    """An input that could not be read: ``file:line: message``, or ``file: message``."""


def read_manifests(paths: list[str]) -> list[SourcedBody]:
    """Read and parse every manifest under ``paths`` (``-`` is standard input).

    Raises:
        LoadError: a path does not exist, cannot be read, or holds a syntax error.
    """
    return list(stream_bodies(paths))


def stream_bodies(paths: list[str]) -> Iterator[SourcedBody]:
    """``read_manifests``, a body at a time (``stream_manifests``): each file is read when its
    turn comes and let go once its bodies are given, so that a caller that decodes each body
    and lets it go holds one file's text and one body at a time.

    Raises:
        LoadError: as ``read_manifests``, when the reading reaches the path or the error (some
            bodies may have been given before).
    """
    for name in paths:
        for path, text in _texts(name):
            try:
                yield from stream_manifests(text, path)
            except Refused as refused:
                raise LoadError(str(refused.error)) from None


def read_file(path: str) -> list[SourcedBody]:
    """Read and parse one manifest file.

    Raises:
        LoadError: it cannot be read, or holds a syntax error.
    """
    return _parsed(_read_text(Path(path)), path)


def _parsed(text: str, path: str) -> list[SourcedBody]:
    parsed = parse_manifests(text, path)
    if isinstance(parsed, ManifestSyntaxError):
        raise LoadError(str(parsed))
    return parsed


def _texts(name: str) -> Iterator[tuple[str, str]]:
    """Each file under ``name`` and its text, read when the caller comes to it."""
    if name == "-":
        yield "-", sys.stdin.read()
        return
    root = Path(name)
    if root.is_dir():
        files = sorted(
            p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES
        )
    elif root.exists():
        files = [root]
    else:
        raise LoadError(f"{name}: no such file or directory")
    for path in files:
        yield str(path), _read_text(path)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise LoadError(f"{path}: cannot be read: {err}") from err


def located(diagnostics: Sequence[Diagnostic], bodies: list[SourcedBody]) -> list[str]:
    """Each diagnostic as a compiler prints it: ``file:line: severity: Kind ns/name …``, the
    place being where the object it is about starts (no prefix when none is known); no
    findings, no look at the bodies (every edit of a large folder, in ``serve``)."""
    if not diagnostics:
        return []
    return [str(d) for d in locate(diagnostics, bodies)]
