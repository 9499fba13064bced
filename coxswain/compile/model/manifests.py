"""Manifest text → raw object bodies, each with the file and line it came from.

Reading files is the shell's job; parsing their text is pure and lives here, so the golden tests
and ``coxswain compile`` share one loader. Accepted forms (docs/architecture.md, "Inputs: the
cluster state"):

- multi-document YAML (``---``), top-level sequences included; JSON (``.json`` files, and
  standard input that parses as JSON), parsed by the JSON parser so that its errors name the
  right line, with each object's line found by the JSON parser (``_json_node``), a list of
  objects an item at a time (``_json_items``);
- ``kind: List`` and typed lists (``IngressList``…, as the API returns them, whose items carry
  no ``kind``/``apiVersion``: those are filled in from the list);
- empty documents, which are skipped.

A syntax error is returned as a ``ManifestSyntaxError`` with the line (1-based), so that the
caller can refuse the whole input instead of compiling half of it. The parsers mark an error
found where the text ends (a collection or a quoted string left open) at the end itself, past
the last line; such an error names the line where the unclosed thing opens instead: the
YAML parser's context mark when it has one (flow collections, quoted strings), else the
innermost flow collection (``[`` or ``{``) still open at the end, else the last line that is
not blank.

Bounds (docs/security.md, "Limits"): a file nested deeper than the parser reads (libyaml stops
at 1,000 levels; the JSON parser at Python's recursion limit) is a syntax error at the line
where it is deepest, and so is a file whose YAML aliases expand its documents past
``expansion_budget``; lists are flattened without recursion.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from coxswain.compile.model.limits import MAX_OBJECT_SIZE, Excess, measure
from coxswain.compile.model.manifests_yaml import Loader, construct

__all__ = ["ManifestSyntaxError", "Refused", "SourcedBody", "parse_manifests", "stream_manifests"]

# Line breaks as YAML counts them (YAML 1.1 §5.4, which PyYAML follows); JSON counts "\n" only.
_YAML_BREAK: Final = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
_FLOW_STARTS: Final = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken)
_FLOW_ENDS: Final = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken)
_PARSED_DEPTH: Final = 1 << 62  # depth is the parser's to bound here; objects, the decoder's
_TOO_DEEP: Final = "the document nests deeper than the parser reads (about 1,000 levels)"


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


class Refused(Exception):
    """Raised by ``stream_manifests`` when the text is refused, as ``error`` says."""

    def __init__(self, error: ManifestSyntaxError) -> None:
        super().__init__(str(error))
        self.error = error


def parse_manifests(text: str, path: str) -> list[SourcedBody] | ManifestSyntaxError:
    """Parse one file's text into object bodies, ``List`` objects flattened.

    Args:
        text: the file content.
        path: the name to report (``-`` for standard input).
    """
    try:
        return list(stream_manifests(text, path))
    except Refused as refused:
        return refused.error


def stream_manifests(text: str, path: str) -> Iterator[SourcedBody]:
    """``parse_manifests``, a body at a time, so that a caller that decodes each one and lets
    it go never holds them all (``coxswain compile``: a 100,000-rule dump's bodies are 380 MB
    of Python objects, docs/benchmarks.md): a YAML document at a time, and a JSON list (a
    top-level array, or a ``List`` as ``kubectl get -o json`` prints it) an item at a time.

    Raises:
        Refused: the text is refused; a YAML text may have given bodies before (the error is
            found where the parser reaches it), a JSON one never has.
    """
    if path.endswith(".json"):
        return _stream_json(text, path)
    if path == "-" and text.lstrip().startswith(("{", "[")):
        try:
            return _stream_json(text, path)
        except Refused:
            pass
    return _stream_yaml(text, path)


def _stream_json(text: str, path: str) -> Iterator[SourcedBody]:
    """The bodies of JSON ``text``: item by item when ``_json_items`` finds a list of plain
    items, else parsed whole. Checked whole before the first body is given."""
    listed = _json_items(text)
    if listed is None:
        parsed = _parse_json(text, path)
        if isinstance(parsed, ManifestSyntaxError):
            raise Refused(parsed)
        return iter(parsed)
    return _json_list_bodies(text, path, *listed)


class _Items(list[int]):
    """Where the items of a JSON array start (a ``List``'s ``items`` in ``_json_items``)."""


def _json_items(text: str) -> tuple[_Items, dict[str, Any] | None] | None:
    """Where the items of JSON ``text`` start when it is a top-level array, or a ``List`` whose
    last ``items`` member is an array (the ``List`` too, to fill typed items), and no item is
    a list or a ``List`` itself; None when it is anything else or no valid JSON (the caller
    parses it whole, for its value or its error). Each item is decoded and let go: checking
    the whole text before the first body is given costs one decoding, as finding each item's
    line did when the text was parsed whole."""
    try:
        at = _skip_space(text, 0)
        if text.startswith("[", at):
            items, at = _array_items(text, at)
            head = None
        elif text.startswith("{", at):
            head, at = _list_head(text, at)
            if not _is_list(head) or not isinstance(head["items"], _Items):
                return None
            items = head["items"]
        else:
            return None
    except (ValueError, RecursionError, _NotPlain):  # JSONDecodeError is a ValueError
        return None
    return (items, head) if _skip_space(text, at) == len(text) else None


class _NotPlain(Exception):
    """Not a list of plain items, for ``_json_items``: the text is parsed whole."""


def _array_items(text: str, at: int) -> tuple[_Items, int]:
    """Where the items of the array at ``at`` start, and the index past its ``]``."""
    items = _Items()
    at = _skip_space(text, at + 1)
    if text.startswith("]", at):
        return items, at + 1
    more = True
    while more:
        item, end = _JSON.raw_decode(text, at)
        if isinstance(item, list) or (isinstance(item, Mapping) and _is_list(item)):
            raise _NotPlain
        items.append(at)
        at, more = _past_member(text, end, "]")
    return items, at


def _list_head(text: str, at: int) -> tuple[dict[str, Any], int]:
    """The members of the object at ``at`` (an array ``items`` as ``_Items``, the last one
    winning as in the parsed value), and the index past its ``}``."""
    head: dict[str, Any] = {}
    at = _skip_space(text, at + 1)
    if text.startswith("}", at):
        return head, at + 1
    more = True
    while more:
        if not text.startswith('"', at):
            raise _NotPlain
        key, at = _JSON.raw_decode(text, at)
        at = _skip_space(text, at)
        if not text.startswith(":", at):
            raise _NotPlain
        at = _skip_space(text, at + 1)
        if key == "items" and text.startswith("[", at):
            head[key], at = _array_items(text, at)
        else:
            head[key], at = _JSON.raw_decode(text, at)
        at, more = _past_member(text, at, "}")
    return head, at


def _past_member(text: str, at: int, close: str) -> tuple[int, bool]:
    """Past the member of an array or object that ends at ``at``: where the next one starts
    and True, or past the ``close`` that ends them and False."""
    at = _skip_space(text, at)
    if text.startswith(",", at):
        return _skip_space(text, at + 1), True
    if text.startswith(close, at):
        return at + 1, False
    raise _NotPlain


def _json_list_bodies(
    text: str, path: str, items: _Items, head: dict[str, Any] | None
) -> Iterator[SourcedBody]:
    """The items found by ``_json_items``, each decoded again when its turn comes, with its
    line (counted from the last one's: no index of every line of the text) and, in a typed
    list, its ``kind`` and ``apiVersion`` (``_list_items``)."""
    kind = api_version = None
    if head is not None and head["kind"] != "List":  # a typed list, as ``_list_items`` fills
        kind, api_version = head["kind"][: -len("List")], head.get("apiVersion")
    line, counted = 1, 0
    for at in items:
        line += text.count("\n", counted, at)
        counted = at
        value = _JSON.raw_decode(text, at)[0]
        if kind and isinstance(value, Mapping):
            value = {"kind": kind, "apiVersion": api_version, **value}
        yield SourcedBody(value, path, line)


def _parse_json(text: str, path: str) -> list[SourcedBody] | ManifestSyntaxError:
    if not text.strip():
        return []
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        if text[err.pos :].strip():
            return ManifestSyntaxError(path, err.lineno, err.msg)
        return _at_end(path, err.msg, _open_json(text), text.split("\n"))
    except RecursionError:
        return ManifestSyntaxError(path, _deepest_json(text), _TOO_DEEP)
    # JSON has no aliases: a value is never larger than its text (no expansion to bound).
    try:
        node: yaml.Node | None = _json_node(text, _skip_space(text, 0), value, _line_starts(text))
    except RecursionError:  # nested as deep as the parser reads: the lines are lost, not the file
        node = None
    return list(_flatten(value, node, path, 1))


_JSON: Final = json.JSONDecoder()
_JSON_SPACE: Final = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, index: int) -> int:
    found = _JSON_SPACE.match(text, index)
    assert found is not None  # the pattern matches the empty string
    return found.end()


def _line_starts(text: str) -> list[int]:
    """The index where each line but the first starts (JSON counts "\n" only)."""
    return [found.end() for found in re.finditer("\n", text)]


def _json_node(text: str, index: int, value: Any, starts: list[int]) -> yaml.Node:
    """Where ``value`` (parsed from valid JSON ``text`` at ``index``) and the parts of it that
    ``_flatten`` walks into start, as the node tree the YAML composer would give them: a list's
    items and a ``List``'s ``items``; anything else is one node with its line. Linear in the
    text: the JSON parser skips what is not walked into, and the text's values are built twice
    at most, where composing it as YAML built a node for every scalar (tens of seconds for a
    ``kubectl get -o json`` of 20,000 objects)."""
    line = bisect.bisect_right(starts, index)
    mark = yaml.Mark("", index, line, 0, None, 0)
    if isinstance(value, list):
        items: list[yaml.Node] = []
        at = _skip_space(text, index + 1)
        for item in value:
            items.append(_json_node(text, at, item, starts))
            at = _skip_space(text, _JSON.raw_decode(text, at)[1])
            at = _skip_space(text, at + 1)  # past "," (or the closing "]")
        return yaml.SequenceNode("tag:yaml.org,2002:seq", items, mark, mark)
    members: list[tuple[yaml.Node, yaml.Node]] = []
    if isinstance(value, Mapping) and _is_list(value):
        at = _skip_space(text, index + 1)
        while text.startswith('"', at):
            key, at = _JSON.raw_decode(text, at)
            at = _skip_space(text, _skip_space(text, at) + 1)  # past ":"
            end = _JSON.raw_decode(text, at)[1]
            if key == "items":  # the last one wins, as in the parsed value
                members = [(yaml.ScalarNode("tag:yaml.org,2002:str", key, mark, mark),
                            _json_node(text, at, value["items"], starts))]  # fmt: skip
            at = _skip_space(text, _skip_space(text, end) + 1)  # past "," (or the "}")
    return yaml.MappingNode("tag:yaml.org,2002:map", members, mark, mark)


def _stream_yaml(text: str, path: str) -> Iterator[SourcedBody]:
    """Each document's objects, flattened as soon as it is built: only their lines outlive the
    node tree, which would otherwise stay alive (a node per scalar) for the collector to walk
    again and again while the rest of the file loads (three times the parse at 20,000
    objects). A file whose YAML aliases expand its documents (recursive ones without end) past
    ``expansion_budget`` is refused: the file's budget, shared by its documents that have
    anchors (one without is never larger than about its text). Those are found by the lines
    of ``&``: no anchor, no alias (one to an unknown anchor does not parse), and an anchor is
    for its own document only (YAML 1.1 §7.1), which ends where its root node does."""
    budget = expansion_budget(text)
    anchors = _anchor_lines(text)
    after = 0  # the line where the last document ended: the next one's anchors are after it
    loader = Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            end = node.end_mark.line
            at = bisect.bisect_left(anchors, after) if anchors is not None else 0
            anchored = anchors is None or (at < len(anchors) and anchors[at] <= end)
            after = end
            value = construct(loader, node, anchored=anchored)
            if value is None:
                continue
            line = node.start_mark.line + 1
            if anchored:
                measured = measure(value, max_depth=_PARSED_DEPTH, max_size=budget)
                if isinstance(measured, Excess):  # a recursive alias is "too large": unbounded
                    raise Refused(
                        ManifestSyntaxError(
                            path,
                            line,
                            "YAML aliases expand the document past twice the size of the file"
                            "; the input is refused",
                        )
                    )
                budget -= measured
            yield from _flatten(value, node, path, line)
    except yaml.MarkedYAMLError as err:
        raise Refused(_yaml_error(text, path, err)) from None
    except yaml.YAMLError as err:
        raise Refused(ManifestSyntaxError(path, 1, str(err))) from None
    except RecursionError:  # the pure-Python loader; libyaml stops at 1,000 levels itself
        raise Refused(ManifestSyntaxError(path, 1, _TOO_DEEP)) from None
    finally:
        loader.dispose()


def _anchor_lines(text: str) -> list[int] | None:
    """The (0-based) line of every ``&`` of ``text`` (each anchor is one; text may hold
    others), in order; None when its lines break on more than ``\n`` (``_YAML_BREAK``):
    then every document counts as anchored."""
    lines: list[int] = []
    at = text.find("&")
    if at < 0:
        return lines
    if any(other in text for other in "\r\x85\u2028\u2029"):
        return None
    line = counted = 0
    while at >= 0:
        line += text.count("\n", counted, at)
        counted = at
        lines.append(line)
        at = text.find("&", at + 1)
    return lines


def expansion_budget(text: str) -> int:
    """How large (in ``model.limits`` units) the documents of ``text`` may be together: twice
    its length, plus one object of the largest size. Without aliases a document is never
    larger than about its text, so only alias expansion (the "billion laughs") reaches this."""
    return 2 * len(text) + MAX_OBJECT_SIZE


def _yaml_error(text: str, path: str, err: yaml.MarkedYAMLError) -> ManifestSyntaxError:
    message = _yaml_message(err)
    mark = err.problem_mark or err.context_mark
    if mark is None:
        return ManifestSyntaxError(path, 1, message)
    lines = _YAML_BREAK.split(text)
    if not _blank_from(lines, mark.line, mark.column):
        return ManifestSyntaxError(path, mark.line + 1, message)
    context = err.context_mark
    if context is not None and not _blank_from(lines, context.line, context.column):
        return ManifestSyntaxError(path, context.line + 1, message)
    return _at_end(path, message, _open_flow(text), lines)


def _blank_from(lines: list[str], line: int, column: int) -> bool:
    """Whether nothing but white space follows (0-based) ``line`` and ``column``."""
    rest = lines[line][column:] if line < len(lines) else ""
    return not rest.strip() and not any(later.strip() for later in lines[line + 1 :])


def _at_end(
    path: str, message: str, opened: tuple[int, str] | None, lines: list[str]
) -> ManifestSyntaxError:
    """An error found where the text ends: at the innermost collection left open, if any."""
    if opened is not None:
        line, bracket = opened
        return ManifestSyntaxError(
            path, line, f"the {bracket!r} opened here is never closed ({message})"
        )
    last = max((i + 1 for i, text in enumerate(lines) if text.strip()), default=1)
    return ManifestSyntaxError(path, last, message)


def _open_flow(text: str) -> tuple[int, str] | None:
    """(1-based line, bracket) of the innermost YAML flow collection still open where the
    scanner stops (the end of the text, or a scanning error)."""
    opened: list[tuple[int, str]] = []
    try:
        for token in yaml.scan(text, Loader=Loader):
            if isinstance(token, _FLOW_STARTS):
                opened.append((token.start_mark.line + 1, token.id))
            elif isinstance(token, _FLOW_ENDS) and opened:
                opened.pop()
    except yaml.YAMLError:
        pass
    return opened[-1] if opened else None


def _deepest_json(text: str) -> int:
    """The (1-based) line where JSON ``text`` first reaches its greatest nesting depth."""
    depth = deepest = 0
    deepest_line = 1
    for line, bracket in _json_brackets(text):
        depth += 1 if bracket in "[{" else -1
        if depth > deepest:
            deepest, deepest_line = depth, line
    return deepest_line


def _open_json(text: str) -> tuple[int, str] | None:
    """(1-based line, bracket) of the innermost JSON array or object still open at the end."""
    opened: list[tuple[int, str]] = []
    for line, bracket in _json_brackets(text):
        if bracket in "[{":
            opened.append((line, bracket))
        elif opened:
            opened.pop()
    return opened[-1] if opened else None


def _json_brackets(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line, bracket) of each bracket of JSON ``text`` outside its strings."""
    line, in_string, escaped = 1, False, False
    for char in text:
        if char == "\n":
            line += 1
        if escaped:
            escaped = False
        elif in_string:
            escaped, in_string = char == "\\", char != '"'
        elif char == '"':
            in_string = True
        elif char in "[]{}":
            yield line, char


def _yaml_message(err: yaml.MarkedYAMLError) -> str:
    parts = [p for p in (err.context, err.problem) if p]
    return ", ".join(parts) or "invalid YAML"


def _flatten(value: Any, node: yaml.Node | None, path: str, line: int) -> Iterator[SourcedBody]:
    """Objects of ``value``, each with its own line when the node tree ``node`` is known.

    Iterative: a document of nested lists cannot exhaust the stack, and (its expanded size
    being bounded by ``_bounded``) cannot yield more bodies than its budget."""
    pending: list[tuple[Any, yaml.Node | None, int]] = [(value, node, line)]
    while pending:
        value, node, line = pending.pop()
        if node is not None:
            line = node.start_mark.line + 1
        if isinstance(value, list):
            items = value
        elif isinstance(value, Mapping) and _is_list(value):
            items = list(_list_items(value))
            node = (
                next(
                    (
                        v
                        for k, v in node.value
                        if isinstance(k, yaml.ScalarNode) and k.value == "items"
                    ),
                    None,
                )
                if isinstance(node, yaml.MappingNode)
                else None
            )
        else:
            yield SourcedBody(value, path, line)
            continue
        nodes: list[Any] = (
            node.value
            if isinstance(node, yaml.SequenceNode) and len(node.value) == len(items)
            else [None] * len(items)
        )
        pending.extend(
            (item, item_node, line)
            for item, item_node in reversed(list(zip(items, nodes, strict=True)))
        )


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
