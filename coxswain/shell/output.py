"""The CLI's data output: JSON with sorted keys and an indent of 2; YAML for people (sorted
keys, block style, multi-line text such as PEM as literal blocks)."""

from __future__ import annotations

import json
from typing import Any, Final

import orjson
import yaml

__all__ = ["dump_json", "dump_yaml"]

_JSON_OPTIONS: Final = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


def dump_json(data: Any) -> bytes:
    """JSON text of plain data (string keys), as ASCII bytes (a 100,000-rule snapshot is 340 MB:
    one copy, not a ``str`` beside them), byte-stable, ending with a newline: the text of
    ``json.dumps(data, sort_keys=True, indent=2)``, written by orjson, whose output is that
    text whenever it is ASCII (the standard library escapes every other character, and it
    writes what orjson refuses: integers past 64 bits). Floats print as their shortest
    round-trip form either way (orjson writes ``1e-5`` where the standard library writes
    ``1e-05``)."""
    try:
        text = orjson.dumps(data, option=_JSON_OPTIONS)
    except orjson.JSONEncodeError:
        return _standard_json(data)
    return text if text.isascii() else _standard_json(data)


def _standard_json(data: Any) -> bytes:
    return (json.dumps(data, sort_keys=True, indent=2) + "\n").encode("ascii")


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as ``|`` blocks."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump_yaml(data: Any) -> str:
    """YAML text of plain data, byte-stable."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=100)
