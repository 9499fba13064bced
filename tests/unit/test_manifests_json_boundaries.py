"""compile.model.manifests: a JSON list is streamed an item at a time, and the lines of the
lists it cannot stream (parsed whole) are those of their items.

``stream_manifests`` promises that a caller that lets each body go never holds them all
(docs/benchmarks.md, the 100,000-rule dump): the peak of memory allocated while the bodies
are consumed is that of a few items, not of the list. ``_json_items`` finds where the items
start (and a ``List``'s other members); a list it does not find is parsed whole, with the
same bodies, so its exact positions are pinned here too.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from coxswain.compile.model.manifests import (
    SourcedBody,
    _json_items,
    parse_manifests,
    stream_manifests,
)

_BIG = 1 << 14  # the characters of each item's string: its decoding dwarfs everything else
_COUNT = 16


def _peak_while_consumed(text: str, path: str) -> tuple[int, list[tuple[Any, int]]]:
    """The peak of memory allocated while the bodies of ``text`` are consumed one at a time,
    and each body's kind and line (the string itself let go)."""
    seen: list[tuple[Any, int]] = []
    tracemalloc.start()
    try:
        for sourced in stream_manifests(text, path):
            seen.append((sourced.body.get("kind"), sourced.line))
            del sourced
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, seen


def _item(index: int) -> dict[str, Any]:
    return {"metadata": {"name": f"n{index}"}, "data": {"x": "y" * _BIG}}


@pytest.mark.parametrize(
    ("shape", "path", "kind"),
    [
        ("array", "in.json", None),
        ("array", "-", None),
        ("List", "in.json", None),
        ("IngressList", "in.json", "Ingress"),
    ],
)
@pytest.mark.parametrize("separators", [(",", ":"), (" , ", " : ")])
def test_a_json_list_is_streamed_an_item_at_a_time(
    shape: str, path: str, kind: str | None, separators: tuple[str, str]
) -> None:
    items = ",\n".join(json.dumps(_item(i), separators=separators) for i in range(_COUNT))
    if shape == "array":
        text = f"[\n{items}\n]"
    else:
        text = (
            f'{{"apiVersion"{separators[1]}"v1"{separators[0]}"kind"{separators[1]}"{shape}"'
            f'{separators[0]}"items"{separators[1]}[\n{items}\n]}}'
        )
    peak, seen = _peak_while_consumed(text, path)
    assert seen == [(kind, 2 + i) for i in range(_COUNT)]
    assert peak < 6 * _BIG  # parsed whole, it is more than _COUNT * _BIG


def test_typed_list_items_get_the_list_s_kind_and_api_version() -> None:
    text = '{"kind":"IngressList","apiVersion":"networking.k8s.io/v1","items":[{"a":1},2]}'
    assert list(stream_manifests(text, "in.json")) == [
        SourcedBody(
            {"kind": "Ingress", "apiVersion": "networking.k8s.io/v1", "a": 1}, "in.json", 1
        ),
        SourcedBody(2, "in.json", 1),
    ]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('[{"a":1},{"b":2}]', ([1, 9], None)),
        ('  [ {"a":1} ,\n {"b":2} ] ', ([4, 15], None)),
        ("[]", ([], None)),
        (" [ ] ", ([], None)),
        (
            '{"kind":"List","x":[7],"items":[{"a":1},{"b":2}],"apiVersion":"v1"}',
            ([32, 40], {"kind": "List", "x": [7], "items": [32, 40], "apiVersion": "v1"}),
        ),
        (
            ' { "kind" : "List" , "items" : [ ] , "apiVersion" : "v1" } ',
            ([], {"kind": "List", "items": [], "apiVersion": "v1"}),
        ),
        (
            '{"kind":"List","items":[],"apiVersion":"v1"}',
            ([], {"kind": "List", "items": [], "apiVersion": "v1"}),
        ),
        ('{"kind":"List","items":[ ]}', ([], {"kind": "List", "items": []})),
        # the last ``items`` wins, as in the parsed value
        (
            '{"kind":"List","items":[1],"items":[2,3]}',
            ([36, 38], {"kind": "List", "items": [36, 38]}),
        ),
    ],
)
def test_the_items_of_a_json_list_are_found_where_they_start(
    text: str, found: tuple[list[int], dict[str, Any] | None]
) -> None:
    assert _json_items(text) == found


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "[[1]]",
        '[{"kind":"List","items":[]}]',
        "[1] 2",
        "[1,]",
        "[1 2]",
        '{"kind":"List","items":{}}',
        '{"kind":"List"}',
        '{"kind":"List","items":[]',
        '{"kind":"List","items":[] "a":1}',
        '{"kind" "List","items":[]}',
        '{1:2,"kind":"List","items":[]}',
        "1",
        "",
    ],
)
def test_what_is_not_a_list_of_plain_items_is_parsed_whole(text: str) -> None:
    assert _json_items(text) is None


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        # a list in a list, and a List in a list, are parsed whole: each item keeps its line
        ('[[{"kind":"A"},{"kind":"B"},\n{"kind":"C"}]]', [1, 1, 2]),
        ('[{"kind":"List","items":[\n{"kind":"A"},\n{"kind":"B"}]}]', [2, 3]),
        ('[ { "kind" : "List" , "items" : [\n{"kind":"A"},\n{"kind":"B"}]}]', [2, 3]),
        ('[{"items":[\n{"kind":"A"}],"kind":"List"}]', [2]),
    ],
)
def test_a_list_parsed_whole_keeps_each_item_s_line(text: str, lines: list[int]) -> None:
    parsed = parse_manifests(text, "in.json")
    assert isinstance(parsed, list)
    assert [sourced.line for sourced in parsed] == lines
