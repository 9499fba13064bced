"""Request paths: normalisation before matching, and the prefixes a path can match.

POLICY: the path is normalised before it is matched and forwarded in its normalised form, so
that what the backend sees is what was routed (``/public/../admin`` cannot reach ``/admin``
through a rule for ``/public``). Normalisation is RFC 3986 §6.2.2: percent-encoded unreserved
characters are decoded (§2.3) and dot segments removed (§5.2.4); runs of slashes are merged, as
nginx's ``merge_slashes`` does by default. Other escapes (``%2F`` among them) are kept as sent.

Linear on client bytes (:mod:`coxswain.http1.syntax` says why): the two patterns here match a
fixed-width escape or a fixed string at each position, and the rest is ``split`` and one pass
over the segments; tests/hostile/test_hostile_parsing.py holds the patterns to its allow-list.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["element_prefixes", "normalize_path", "split_target"]

_UNRESERVED_ESCAPE: Final = re.compile(r"%(2[dDeE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF]|7[eE])")
_NEEDS_WORK: Final = re.compile(r"//|/\.|%")


def split_target(target: str) -> tuple[str, str]:
    """Split a request target into path and query (``?`` kept with the query, fragment dropped)."""
    target = target.split("#", 1)[0]
    path, mark, query = target.partition("?")
    return path or "/", mark + query


def normalize_path(path: str) -> str:
    """The normalised form of an absolute path (see the module docstring)."""
    if _NEEDS_WORK.search(path) is None:
        return path
    path = _UNRESERVED_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), path)
    segments = path.split("/")
    kept: list[str] = []
    for segment in segments[1:]:
        if segment in ("", "."):
            continue
        if segment == "..":
            if kept:
                kept.pop()
            continue
        kept.append(segment)
    trailing = segments[-1] in ("", ".", "..") and len(segments) > 2
    return "/" + "/".join(kept) + ("/" if trailing and kept else "")


def element_prefixes(path: str) -> Iterator[str]:
    """Every prefix a normalised path matches element-wise, longest first.

    ``/a/b/`` yields ``/a/b``, ``/a``, ``/`` (Kubernetes Ingress spec: Prefix matching is done
    element by element, and a trailing slash is ignored).
    """
    prefix = path.rstrip("/") or "/"
    while True:
        yield prefix
        if prefix == "/":
            return
        prefix = prefix[: prefix.rfind("/")] or "/"
