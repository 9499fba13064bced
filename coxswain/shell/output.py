"""The CLI's data output: JSON with sorted keys and an indent of 2; YAML for people (sorted
keys, block style, multi-line text such as PEM as literal blocks)."""

from __future__ import annotations

import json
from typing import Any, Final

import orjson
import yaml

__all__ = ["dump_json", "dump_yaml", "json_pieces"]

_JSON_OPTIONS: Final = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
_PIECE_OPTIONS: Final = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


def dump_json(data: Any) -> bytes:
    """JSON text of plain data (string keys), as ASCII bytes (a 100,000-rule snapshot is 340 MB:
    one copy, not a ``str`` beside them), byte-stable, ending with a newline: the text of
    ``json.dumps(data, sort_keys=True, indent=2)``, written by orjson, whose output is that
    text whenever it is printable ASCII (the standard library escapes every other character, and it
    writes what orjson refuses: integers past 64 bits). Floats print as their shortest
    round-trip form either way (orjson writes ``1e-5`` where the standard library writes
    ``1e-05``)."""
    try:
        text = orjson.dumps(data, option=_JSON_OPTIONS)
    except orjson.JSONEncodeError:
        return _standard_json(data)
    return text if _as_standard(text) else _standard_json(data)


def json_pieces(data: Any) -> list[bytes]:
    """The text of ``dump_json(data)``, in pieces to write one after the other: mappings and
    lists are laid out here, and each item of a list is written by orjson, once per object
    and level however often the tree holds it. A snapshot holds a rule once per host and
    listener that serves it: written whole, its text (340 MB at 100,000 rules,
    docs/benchmarks.md) was 2.4 times its distinct pieces, and was built in one string."""
    pieces: list[bytes] = []
    known: dict[tuple[int, int], bytes] = {}
    try:
        _lay_out(data, 0, pieces, known)
    except (orjson.JSONEncodeError, _Unwritten):
        return [_standard_json(data)]
    if not all(_as_standard(text) for text in known.values()):
        return [_standard_json(data)]
    pieces.append(b"\n")
    return pieces


def _as_standard(text: bytes) -> bool:
    """Whether orjson's ``text`` is what the standard library writes: it escapes every
    character outside printable ASCII, DEL (0x7f) included, which orjson leaves as it is
    (RFC 8259 §7 requires escapes below 0x20 only)."""
    return text.isascii() and b"\x7f" not in text


class _Unwritten(Exception):
    """A mapping key that orjson refuses (no string) or may write otherwise than the standard
    library (not printable ASCII: checked on the ``str``, not encoded for it)."""


def _lay_out(
    value: Any, level: int, pieces: list[bytes], known: dict[tuple[int, int], bytes]
) -> None:
    """Append the pieces of ``value``, which starts ``level`` levels deep, to ``pieces``."""
    inner = b"\n" + b"  " * (level + 1)
    if isinstance(value, list) and value:
        pieces.append(b"[" + inner)
        between = b"," + inner
        for at, item in enumerate(value):
            if at:
                pieces.append(between)
            pieces.append(_whole(item, level + 1, known))
        pieces.append(b"\n" + b"  " * level + b"]")
    elif isinstance(value, dict) and value:
        if not all(
            isinstance(name, str) and name.isascii() and name.isprintable() for name in value
        ):
            raise _Unwritten
        opened, between = b"{" + inner, b"," + inner
        for at, name in enumerate(sorted(value)):
            pieces.append(between if at else opened)
            pieces.append(orjson.dumps(name) + b": ")
            _lay_out(value[name], level + 1, pieces, known)
        pieces.append(b"\n" + b"  " * level + b"}")
    else:
        pieces.append(_whole(value, level, known))


def _whole(value: Any, level: int, known: dict[tuple[int, int], bytes]) -> bytes:
    """The text of ``value`` at ``level``, written by orjson the first time."""
    key = (id(value), level)  # the data is alive, and so every id in it, until the end
    text = known.get(key)
    if text is None:
        text = orjson.dumps(value, option=_PIECE_OPTIONS)
        # Copied either way: orjson's bytes keep their first buffer (4 KiB) however short.
        if b"\n" in text:
            text = text.replace(b"\n", b"\n" + b"  " * level)
        else:
            text = bytes(memoryview(text))
        known[key] = text
    return text


def _standard_json(data: Any) -> bytes:
    return (json.dumps(data, sort_keys=True, indent=2) + "\n").encode("ascii")


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as ``|`` blocks, and a value held twice (a
    snapshot's rule served on several hosts) in full each time, as JSON does, not as an
    anchor and its aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump_yaml(data: Any) -> str:
    """YAML text of plain data, byte-stable."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=100)
