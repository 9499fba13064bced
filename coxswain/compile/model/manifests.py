"""Manifest text → raw object bodies, each with the file and line it came from.

Reading files is the shell's job; parsing their text is pure and lives here, so the golden tests
and ``coxswain compile`` share one loader (STYLE §9). Accepted forms (ARCHITECTURE §2):

- multi-document YAML (``---``), JSON (YAML 1.2 is a superset, but JSON text is parsed by the
  JSON parser so its errors name the right line);
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

__all__ = ["ManifestSyntaxError", "SourcedBody", "flatten_lists", "parse_manifests"]

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
    stripped = text.lstrip()
    if path.endswith(".json") or stripped.startswith(("{", "[")):
        return _parse_json(text, path)
    return _parse_yaml(text, path)


def _parse_json(text: str, path: str) -> list[SourcedBody] | ManifestSyntaxError:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        return ManifestSyntaxError(path, err.lineno, err.msg)
    line = text[: len(text) - len(text.lstrip())].count("\n") + 1
    values = value if isinstance(value, list) else [value]
    return [item for v in values for item in flatten_lists(SourcedBody(v, path, line))]


def _parse_yaml(text: str, path: str) -> list[SourcedBody] | ManifestSyntaxError:
    found: list[SourcedBody] = []
    loader = _Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            value = loader.construct_document(node)
            if value is None:
                continue
            line = node.start_mark.line + 1
            if isinstance(value, Mapping) and isinstance(node, yaml.MappingNode):
                found.extend(_flatten_yaml(value, node, path, line))
            else:
                found.append(SourcedBody(value, path, line))
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


def _flatten_yaml(
    value: Mapping[str, Any], node: yaml.MappingNode, path: str, line: int
) -> Iterator[SourcedBody]:
    """Like ``flatten_lists``, but each item keeps its own line from the YAML node tree."""
    if not _is_list(value):
        yield SourcedBody(value, path, line)
        return
    items_node = next(
        (v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == "items"), None
    )
    lines = (
        [n.start_mark.line + 1 for n in items_node.value]
        if isinstance(items_node, yaml.SequenceNode)
        else []
    )
    for index, item in enumerate(_list_items(value)):
        item_line = lines[index] if index < len(lines) else line
        yield from flatten_lists(SourcedBody(item, path, item_line))


def flatten_lists(sourced: SourcedBody) -> Iterator[SourcedBody]:
    """Yield the objects of a ``List``/``*List`` (recursively), or the object itself."""
    if not (isinstance(sourced.body, Mapping) and _is_list(sourced.body)):
        yield sourced
        return
    for item in _list_items(sourced.body):
        yield from flatten_lists(SourcedBody(item, sourced.path, sourced.line))


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
        if item_kind and isinstance(item, Mapping) and "kind" not in item:
            item = {"kind": item_kind, "apiVersion": api_version, **item}
        yield item
