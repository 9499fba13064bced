"""Field ownership (``metadata.managedFields``) and server-side apply, in a simple model.

The real server tracks ownership with structured-merge-diff, down to list items keyed by merge
keys. This model is coarser and documented here so tests do not rely on more:

- A field path is a path of object keys down to a leaf; **lists are atomic leaves** (applying
  ``spec.ports`` owns the whole list), and so are scalars and empty objects.
- Ownership is kept per (manager, operation, subresource), as the real server's entries are, and
  stored in ``metadata.managedFields`` (``fieldsType: FieldsV1``, ``f:`` keys only).
- Update operations (create, PUT, non-apply PATCH) give the writing manager the fields whose value
  changed and take them from everyone else; removed fields are dropped from every entry.
- Apply: a field another entry owns with a different value is a conflict (409) unless ``force``,
  which moves ownership. Fields the applier owned but no longer applies are removed from the
  object unless another entry still owns them. Owning a field with the same value is shared.
- Identity and server-set metadata (name, namespace, uid, resourceVersion, generation,
  timestamps, managedFields) are never owned.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any

from .errors import ApiError

Obj = dict[str, Any]
Path = tuple[str, ...]

_SERVER_METADATA = frozenset(
    {
        "name",
        "namespace",
        "generateName",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)
_MISSING = object()


@dataclass(frozen=True)
class Owner:
    """One ``managedFields`` entry: who set which fields, and how."""

    manager: str
    operation: str
    subresource: str
    api_version: str
    time: str
    fields: frozenset[Path]

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)


def _owned(path: Path) -> bool:
    if path[0] in ("apiVersion", "kind"):
        return False
    return not (path[0] == "metadata" and len(path) > 1 and path[1] in _SERVER_METADATA)


def leaves(obj: Obj) -> dict[Path, Any]:
    """Every ownable leaf path of `obj` and its value (lists and empty objects are leaves)."""
    found: dict[Path, Any] = {}

    def walk(value: Any, path: Path) -> None:
        if isinstance(value, dict) and (value or not path):
            for key, child in value.items():
                walk(child, (*path, key))
        elif _owned(path):
            found[path] = value

    walk(obj, ())
    return found


def in_scope(paths: dict[Path, Any], subresource: str, has_status: bool) -> dict[Path, Any]:
    """The paths a write through this endpoint may touch (``/status`` only status, main not)."""
    if subresource == "status":
        return {p: v for p, v in paths.items() if p[0] == "status"}
    if has_status:
        return {p: v for p, v in paths.items() if p[0] != "status"}
    return paths


def _encode(fields: frozenset[Path]) -> Obj:
    tree: Obj = {}
    for path in sorted(fields):
        node = tree
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return tree


def _decode(tree: Obj, prefix: Path = ()) -> frozenset[Path]:
    paths: set[Path] = set()
    for key, child in tree.items():
        if not key.startswith("f:"):
            continue
        path = (*prefix, key[2:])
        paths |= _decode(child, path) if child else {path}
    return frozenset(paths)


def read_owners(obj: Obj) -> list[Owner]:
    """The entries of ``metadata.managedFields`` (unknown key kinds like ``k:`` are skipped)."""
    return [
        Owner(
            manager=entry.get("manager", ""),
            operation=entry.get("operation", "Update"),
            subresource=entry.get("subresource", ""),
            api_version=entry.get("apiVersion", ""),
            time=entry.get("time", ""),
            fields=_decode(entry.get("fieldsV1") or {}),
        )
        for entry in obj.get("metadata", {}).get("managedFields") or []
    ]


def write_owners(owners: list[Owner]) -> list[Obj]:
    """``metadata.managedFields`` for `owners`."""
    entries = []
    for owner in owners:
        entry: Obj = {
            "manager": owner.manager,
            "operation": owner.operation,
            "apiVersion": owner.api_version,
            "time": owner.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": _encode(owner.fields),
        }
        if owner.subresource:
            entry["subresource"] = owner.subresource
        entries.append(entry)
    return entries


def same_ownership(a: list[Owner], b: list[Owner]) -> bool:
    """Whether two entry lists differ only in timestamps (then a write is a no-op)."""
    return [(o.key, o.fields) for o in a] == [(o.key, o.fields) for o in b]


def _with_entry(owners: list[Owner], mine: Owner) -> list[Owner]:
    """`owners` with `mine` replacing its previous entry (kept in place) or appended."""
    result = [mine if o.key == mine.key else o for o in owners]
    if all(o.key != mine.key for o in owners):
        result.append(mine)
    return [o for o in result if o.fields]


def record_update(old: Obj | None, new: Obj, owners: list[Owner], writer: Owner) -> list[Owner]:
    """Ownership after an Update-operation write by `writer` (whose `fields` are ignored)."""
    before = leaves(old) if old is not None else {}
    after = leaves(new)
    changed = {p for p, v in after.items() if before.get(p, _MISSING) != v}
    kept = [
        replace(o, fields=frozenset(p for p in o.fields if p in after and p not in changed))
        for o in owners
    ]
    previous = next((o.fields for o in owners if o.key == writer.key), frozenset())
    mine = frozenset(p for p in previous if p in after) | changed
    return _with_entry(kept, replace(writer, fields=mine))


def _get(obj: Obj, path: Path) -> Any:
    node: Any = obj
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _set(obj: Obj, path: Path, value: Any) -> None:
    node = obj
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    if value == {} and isinstance(node.get(path[-1]), dict):
        return
    node[path[-1]] = copy.deepcopy(value)


def _delete(obj: Obj, path: Path) -> None:
    parent = _get(obj, path[:-1])
    if isinstance(parent, dict):
        parent.pop(path[-1], None)


def _conflicts(
    current: Obj, applied: dict[Path, Any], others: list[Owner]
) -> list[tuple[str, Path]]:
    return [
        (other.manager, path)
        for other in others
        for path in sorted(other.fields & applied.keys())
        if _get(current, path) != applied[path]
    ]


def _conflict_error(conflicts: list[tuple[str, Path]], api_version: str) -> ApiError:
    causes = [
        {
            "type": "FieldManagerConflict",
            "message": f'conflict with "{manager}" using {api_version}',
            "field": "." + ".".join(path),
        }
        for manager, path in conflicts
    ]
    listing = "\n".join(f"- {c['message']}: {c['field']}" for c in causes)
    return ApiError(
        409,
        f"Apply failed with {len(causes)} conflict(s):\n{listing}",
        details={"causes": causes},
    )


def apply(
    current: Obj, applied: dict[Path, Any], owners: list[Owner], applier: Owner, force: bool
) -> tuple[Obj, list[Owner]]:
    """Server-side apply of the leaf paths `applied` by `applier` onto `current`.

    Returns the new object and entries; raises a 409 listing every conflicting field unless
    `force`, in which case the conflicting fields change hands.
    """
    others = [o for o in owners if o.key != applier.key]
    conflicts = _conflicts(current, applied, others)
    if conflicts and not force:
        raise _conflict_error(conflicts, applier.api_version)
    taken = {path for _, path in conflicts}
    others = [replace(o, fields=o.fields - taken) for o in others]
    result = copy.deepcopy(current)
    previous = next((o.fields for o in owners if o.key == applier.key), frozenset())
    still_owned = frozenset().union(*(o.fields for o in others))
    for path in previous - applied.keys() - still_owned:
        _delete(result, path)
    for path, value in applied.items():
        _set(result, path, value)
    updated = {o.key: o for o in others}
    ordered = [updated.get(o.key, o) for o in owners]
    return result, _with_entry(ordered, replace(applier, fields=frozenset(applied)))
