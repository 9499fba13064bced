"""Manifest text → raw object bodies, each with the file and line it came from.

Reading files is the shell's job; parsing their text is pure and lives here, so the golden tests
and ``coxswain compile`` share one loader (STYLE §9). Accepted forms (ARCHITECTURE §2):

- multi-document YAML (``---``), top-level sequences included; JSON (``.json`` files, and
  standard input that parses as JSON), parsed by the JSON parser so that its errors name the
  right line, with each object's line taken from the YAML composer;
- ``kind: List`` and typed lists (``IngressList``…, as the API returns them, whose items carry
  no ``kind``/``apiVersion``: those are filled in from the list);
- empty documents, which are skipped.

A syntax error is returned as a ``ManifestSyntaxError`` with the line (1-based), so that the
caller can refuse the whole input instead of compiling half of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = ["ManifestSyntaxError", "SourcedBody", "parse_manifests"]

try:  # libyaml is ~10x faster; the pure loader gives identical results.
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment,unused-ignore]
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


@dataclass(frozen=True, slots=True)
class SourcedBody:
    """One raw object and where it starts: ``path:line``."""

    body: Any
    path: str
    line: int

    @property
    def where(self) -> str:
        """``path:line``, for messages."""
        return f"{self.path}:{self.line}"


@dataclass(frozen=True, slots=True)
class ManifestSyntaxError:
    """Text that is neither YAML nor JSON; ``line`` is 1-based."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def parse_manifests(text: str, path: str) -> list[SourcedBody] | ManifestSyntaxError:
    """Parse one file's text into object bodies, ``List`` objects flattened.

    Args:
        text: the file content.
        path: the name to report (``-`` for standard input).
    """
    if path.endswith(".json"):
        return _parse_json(text, path)
    if path == "-" and text.lstrip().startswith(("{", "[")):
        parsed = _parse_json(text, path)
        if not isinstance(parsed, ManifestSyntaxError):
            return parsed
    return _parse_yaml(text, path)


def _parse_json(text: str, path: str) -> list[SourcedBody] | ManifestSyntaxError:
    if not text.strip():
        return []
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        return ManifestSyntaxError(path, err.lineno, err.msg)
    # The JSON parser gives values; the YAML composer (JSON text is YAML) gives their lines.
    try:
        node: yaml.Node | None = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        node = None
    return list(_flatten(value, node, path, 1))


def _parse_yaml(text: str, path: str) -> list[SourcedBody] | ManifestSyntaxError:
    found: list[SourcedBody] = []
    loader = _Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            value = loader.construct_document(node)
            if value is not None:
                found.extend(_flatten(value, node, path, 1))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else 1
        return ManifestSyntaxError(path, line, _yaml_message(err))
    except yaml.YAMLError as err:
        return ManifestSyntaxError(path, 1, str(err))
    finally:
        loader.dispose()
    return found


def _yaml_message(err: yaml.MarkedYAMLError) -> str:
    parts = [p for p in (err.context, err.problem) if p]
    return ", ".join(parts) or "invalid YAML"


def _flatten(value: Any, node: yaml.Node | None, path: str, line: int) -> Iterator[SourcedBody]:
    """Objects of ``value``, each with its own line when the node tree ``node`` is known."""
    if node is not None:
        line = node.start_mark.line + 1
    if isinstance(value, list):
        items = value
    elif isinstance(value, Mapping) and _is_list(value):
        items = list(_list_items(value))
        node = (
            next(
                (v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == "items"),
                None,
            )
            if isinstance(node, yaml.MappingNode)
            else None
        )
    else:
        yield SourcedBody(value, path, line)
        return
    nodes: list[Any] = (
        node.value
        if isinstance(node, yaml.SequenceNode) and len(node.value) == len(items)
        else [None] * len(items)
    )
    for item, item_node in zip(items, nodes, strict=True):
        yield from _flatten(item, item_node, path, line)


def _is_list(value: Mapping[str, Any]) -> bool:
    kind = value.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and "items" in value


def _list_items(value: Mapping[str, Any]) -> Iterator[object]:
    """The items of a list, with ``kind``/``apiVersion`` filled in for typed lists."""
    items = value.get("items")
    if not isinstance(items, list):
        return
    kind = str(value.get("kind"))
    item_kind = kind[: -len("List")] if kind != "List" else None
    api_version = value.get("apiVersion")
    for item in items:
        if item_kind and isinstance(item, Mapping):
            item = {"kind": item_kind, "apiVersion": api_version, **item}
        yield item
