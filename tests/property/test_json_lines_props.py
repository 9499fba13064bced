"""A JSON manifest's objects keep the lines the YAML composer gives them (JSON text is YAML),
found by the JSON parser alone (``compile.model.manifests._json_node``): random nestings of
lists, ``List`` objects and plain objects, in random layouts."""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile.model.manifests import _flatten, parse_manifests


def _service(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "x": [1, {}]}}


def _lists(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Lists of ``inner``, bare or as a ``kind: List`` object."""
    items = st.lists(inner, max_size=3)
    return items | items.map(lambda found: {"kind": "List", "apiVersion": "v1", "items": found})


bodies = st.recursive(st.builds(_service, st.sampled_from(["a", "b", "c"])), _lists, max_leaves=8)
layouts = st.sampled_from([(None, None), (2, None), (None, (",", ":")), (1, (" , ", " : "))])


@given(bodies, layouts, st.sampled_from(["", "\n", "\n\n  "]))
def test_json_objects_keep_the_lines_the_yaml_composer_gives(
    value: Any, layout: tuple[int | None, tuple[str, str] | None], before: str
) -> None:
    indent, separators = layout
    text = before + json.dumps(value, indent=indent, separators=separators) + "\n"
    parsed = parse_manifests(text, "dump.json")
    assert isinstance(parsed, list)
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    expected = list(_flatten(json.loads(text), node, "dump.json", 1))
    assert [(b.body, b.line) for b in parsed] == [(b.body, b.line) for b in expected]
