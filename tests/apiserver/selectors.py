"""Label and field selectors, parsed into predicates over stored objects.

Label selectors support the whole string syntax (``=``, ``==``, ``!=``, ``in``, ``notin``,
existence and ``!`` non-existence). Field selectors support only ``metadata.name`` and
``metadata.namespace``, which every kind supports on the real server; anything else is refused
with 400 as the real server refuses fields a kind does not index.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .errors import ApiError

Obj = dict[str, Any]
Predicate = Callable[[Obj], bool]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[-A-Za-z0-9_.]*"
_NOT_EXISTS = re.compile(rf"^!\s*({_KEY})$")
_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s*\(([^()]*)\)$")
_EQUALITY = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*({_VALUE})$")
_EXISTS = re.compile(rf"^({_KEY})$")
FIELDS = {"metadata.name": ("metadata", "name"), "metadata.namespace": ("metadata", "namespace")}


def _split_requirements(selector: str) -> list[str]:
    """Split at the commas that separate requirements, not those inside ``in (a,b)``."""
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return [p for p in parts if p]


def _label_requirement(text: str) -> Callable[[dict[str, str]], bool]:
    if match := _NOT_EXISTS.match(text):
        key = match.group(1)
        return lambda labels: key not in labels
    if match := _SET.match(text):
        key, operator, raw = match.groups()
        values = {v.strip() for v in raw.split(",") if v.strip()}
        if operator == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQUALITY.match(text):
        key, operator, value = match.groups()
        if operator == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _EXISTS.match(text):
        key = match.group(1)
        return lambda labels: key in labels
    raise ApiError(400, f"unable to parse requirement: {text!r}")


def label_selector(selector: str | None) -> Predicate:
    """A predicate for ``?labelSelector=``; every requirement must hold (they are ANDed)."""
    requirements = [_label_requirement(part) for part in _split_requirements(selector or "")]

    def matches(obj: Obj) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(requirement(labels) for requirement in requirements)

    return matches


def _field_requirement(text: str) -> Predicate:
    match = re.match(r"^([^=!]+?)\s*(==|=|!=)\s*(.*)$", text)
    if match is None:
        raise ApiError(400, f"invalid field selector: {text!r}")
    field, operator, value = match.groups()
    if field not in FIELDS:
        raise ApiError(400, f'field label not supported: "{field}"')
    section, name = FIELDS[field]

    def matches(obj: Obj) -> bool:
        equal = (obj.get(section, {}).get(name) or "") == value
        return equal if operator != "!=" else not equal

    return matches


def field_selector(selector: str | None) -> Predicate:
    """A predicate for ``?fieldSelector=``: comma-separated, ANDed requirements."""
    requirements = [_field_requirement(p.strip()) for p in (selector or "").split(",") if p.strip()]
    return lambda obj: all(requirement(obj) for requirement in requirements)
