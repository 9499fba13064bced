"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), applied to plain JSON values.

Strategic merge patch is served with the merge-patch rules: lists are replaced whole instead of
merged by key, and ``$patch`` directives are not interpreted. That is what the real server does
for lists without a patch strategy; for keyed lists (containers, ports...) it is a simplification.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from .errors import ApiError

if TYPE_CHECKING:
    from collections.abc import Callable

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes a member, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    """RFC 6901 JSON pointer tokens (``~1`` is ``/``, ``~0`` is ``~``)."""
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f"invalid JSON pointer {path!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _index(container: list[Any], token: str, *, insert: bool) -> int:
    if insert and token == "-":
        return len(container)
    if not token.isdigit() or int(token) > len(container) - (0 if insert else 1):
        raise ApiError(422, f"array index {token!r} out of range")
    return int(token)


def _parent(document: Any, tokens: list[str]) -> Any:
    node = document
    for token in tokens[:-1]:
        try:
            node = (
                node[_index(node, token, insert=False)] if isinstance(node, list) else node[token]
            )
        except (KeyError, TypeError) as exc:
            raise ApiError(422, f"path /{'/'.join(tokens)} does not exist") from exc
    return node


def _get(document: Any, tokens: list[str]) -> Any:
    if not tokens:
        return document
    parent, last = _parent(document, tokens), tokens[-1]
    if isinstance(parent, list):
        return parent[_index(parent, last, insert=False)]
    if not isinstance(parent, dict) or last not in parent:
        raise ApiError(422, f"path /{'/'.join(tokens)} does not exist")
    return parent[last]


def _remove(document: Any, tokens: list[str]) -> Any:
    value = _get(document, tokens)
    parent, last = _parent(document, tokens), tokens[-1]
    if isinstance(parent, list):
        del parent[_index(parent, last, insert=False)]
    else:
        del parent[last]
    return value


def _add(document: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = _parent(document, tokens), tokens[-1]
    if isinstance(parent, list):
        parent.insert(_index(parent, last, insert=True), value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise ApiError(422, f"cannot add at /{'/'.join(tokens)}")
    return document


def _apply_operation(document: Any, operation: dict[str, Any]) -> Any:
    op, path = operation.get("op"), _pointer(operation.get("path", ""))
    if op == "add":
        return _add(document, path, copy.deepcopy(operation["value"]))
    if op == "remove":
        _remove(document, path)
        return document
    if op == "replace":
        _remove(document, path)
        return _add(document, path, copy.deepcopy(operation["value"]))
    if op == "move":
        return _add(document, path, _remove(document, _pointer(operation["from"])))
    if op == "copy":
        return _add(document, path, copy.deepcopy(_get(document, _pointer(operation["from"]))))
    if op == "test":
        if _get(document, path) != operation.get("value"):
            raise ApiError(422, f"test operation failed at {operation.get('path')!r}")
        return document
    raise ApiError(400, f"unknown JSON patch operation {op!r}")


def json_patch(document: Any, operations: Any) -> Any:
    """RFC 6902, all-or-nothing: the input is never mutated; a failing operation raises 422."""
    if not isinstance(operations, list):
        raise ApiError(400, "a JSON patch must be a list of operations")
    result = copy.deepcopy(document)
    for operation in operations:
        if not isinstance(operation, dict):
            raise ApiError(400, "a JSON patch operation must be an object")
        try:
            result = _apply_operation(result, operation)
        except KeyError as exc:
            raise ApiError(400, f"JSON patch operation lacks {exc}") from exc
    return result


def patcher(content_type: str, custom: bool) -> Callable[[Any, Any], Any]:
    """The patch function for a non-apply PATCH content type; 415 for anything else.

    Like the real server, strategic merge patch is refused for custom resources.
    """
    if content_type == JSON_PATCH:
        return json_patch
    if content_type == MERGE or (content_type == STRATEGIC and not custom):
        return merge_patch
    raise ApiError(415, f"the body of the request was in an unknown format: {content_type}")
