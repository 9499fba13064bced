"""YAML documents → plain values, as PyYAML's safe loader builds them, in less time.

The libyaml parser composes each document's node tree; PyYAML's ``SafeConstructor`` then walks
it with several Python calls per node, which costs more than the parse itself on a dump of
Kubernetes objects. ``construct`` builds the same values from the same nodes with one loop:
strings, mappings and sequences (nearly every node of a dump) in place, every other node
(numbers, booleans, null, timestamps, explicit tags, merge keys, non-scalar keys) handed to
PyYAML's own constructor, so that values and errors stay PyYAML's. ``Loader.resolve`` answers
collections and the plain scalars no implicit resolver can claim (their first character starts
none of the resolvers' patterns, YAML 1.1 §10.3 as PyYAML implements it) without trying the
patterns, and tries them once per distinct claimed text (``name``, ``80``, ``true``…).

The fast path is for documents without anchors only: an alias is the same node reached twice,
which PyYAML builds once and shares; a copy per reference would expand a "billion laughs"
before ``model.limits`` could measure it. The caller passes documents with anchors to
``Loader.construct_document`` instead.
"""

from __future__ import annotations

from typing import Any, Final

import yaml

__all__ = ["Loader", "construct"]

try:  # libyaml is ~10x faster; the pure loader gives identical results.
    _Base: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment,unused-ignore]
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Base = yaml.SafeLoader

_STR: Final = "tag:yaml.org,2002:str"
_MAP: Final = "tag:yaml.org,2002:map"
_SEQ: Final = "tag:yaml.org,2002:seq"
_MERGE_KEYS: Final = frozenset({"tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"})
_RESOLVERS: Final = _Base.yaml_implicit_resolvers
# First characters some implicit resolver may claim; None would be a resolver for any.
_CLAIMED: Final = frozenset(_RESOLVERS) | {""}
_IMPLICIT_ONLY: Final = None not in _RESOLVERS and not _Base.yaml_path_resolvers
_MEMO_ENTRIES: Final = 1 << 16  # distinct claimed scalars remembered per loader


class Loader(_Base):  # type: ignore[misc,valid-type,unused-ignore]
    """PyYAML's safe loader (libyaml's when present), resolving tags with fewer pattern
    matches: collections and unclaimed plain scalars at once, a claimed scalar's text once."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._tags: dict[str, str] = {}  # the tag of each claimed plain scalar seen, bounded

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """The tag of a node without one, as PyYAML resolves it: with only implicit
        resolvers (no path resolvers), a plain scalar's tag depends on its text alone."""
        if not _IMPLICIT_ONLY:
            return super().resolve(kind, value, implicit)
        if kind is not yaml.ScalarNode:
            return _MAP if kind is yaml.MappingNode else _SEQ
        if not implicit[0] or value[:1] not in _CLAIMED:
            return _STR
        tag = self._tags.get(value)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(self._tags) < _MEMO_ENTRIES:
                self._tags[value] = tag
        return tag


def construct(loader: yaml.SafeLoader, root: yaml.Node, *, anchored: bool) -> Any:
    """The value of the document ``root`` (composed by ``loader``), equal to
    ``loader.construct_document(root)``: built by PyYAML when the text has ``anchored``
    nodes, else here. Iterative: libyaml nests 1,000 levels deep, past Python's recursion
    limit.

    Raises:
        yaml.constructor.ConstructorError: as PyYAML does, and where PyYAML's constructors
            raise another error (``!!int x``, an integer of more digits than Python converts):
            at the node that raised.
    """
    if anchored:
        return _pyyaml(loader, root)
    pending: list[tuple[yaml.Node, Any]] = []

    def value_of(node: yaml.Node) -> Any:
        tag, kind = node.tag, type(node)
        if tag == _STR and kind is yaml.ScalarNode:
            return node.value
        if tag == _MAP and kind is yaml.MappingNode and _plain_keys(node):
            built: Any = {}
        elif tag == _SEQ and kind is yaml.SequenceNode:
            built = []
        else:
            return _pyyaml(loader, node)
        pending.append((node, built))
        return built

    result = value_of(root)
    while pending:
        node, built = pending.pop()
        if isinstance(built, list):
            built.extend(value_of(item) for item in node.value)
        else:
            for key, item in node.value:
                name = value_of(key)
                try:
                    built[name] = value_of(item)
                except TypeError as err:  # as PyYAML's constructor refuses it
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found unhashable key ({err})", key.start_mark,
                    ) from err  # fmt: skip
    return result


def _pyyaml(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """``loader.construct_document(node)``, its stray errors made constructor errors."""
    try:
        return loader.construct_document(node)
    except (ValueError, TypeError, AttributeError, LookupError) as err:
        raise yaml.constructor.ConstructorError(
            None, None, f"cannot construct a {node.tag} ({err})", node.start_mark
        ) from err


def _plain_keys(node: yaml.Node) -> bool:
    """Whether every key of ``node`` is a scalar and none a merge (``<<``) or value (``=``)
    key: such a mapping is built as it reads; any other goes to PyYAML (which refuses an
    unhashable key with its mark)."""
    return all(type(key) is yaml.ScalarNode and key.tag not in _MERGE_KEYS for key, _ in node.value)
