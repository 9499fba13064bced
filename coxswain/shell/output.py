"""YAML output for people: sorted keys, block style, multi-line text (PEM) as literal blocks."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["dump_yaml"]


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as ``|`` blocks."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump_yaml(data: Any) -> str:
    """YAML text of plain data, byte-stable."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=100)
