"""shell.control.json_bodies: the API server's JSON decoded within a nesting bound, and only what
is too deep refused: a list's items one by one, a watch event named by its top levels."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile.model.limits import MAX_OBJECT_DEPTH
from coxswain.shell.control.json_bodies import (
    MAX_BODY_DEPTH,
    Listing,
    Refused,
    decode_answer,
    decode_event,
    decode_list,
    nesting,
)
from tests.apiserver.deep_values import dumps

TOO_DEEP = f"nests deeper than {MAX_BODY_DEPTH} levels"

# strings made of what the count must tell apart: brackets, quotes and backslashes inside them
_TRICKY = st.text(alphabet='[]{}"\\\\/ab\u00e9\n', max_size=6)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY, inner, max_size=3),
    max_leaves=20,
)


def depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


def nested(levels: int, leaf: object = 1) -> object:
    """``levels`` dicts around ``leaf``."""
    for _ in range(levels):
        leaf = {"a": leaf}
    return leaf


def item(name: str, levels: int) -> dict[str, Any]:
    """An object named ``app/name`` nesting ``levels`` levels (at least 3)."""
    body = {
        "metadata": {"name": name, "namespace": "app", "resourceVersion": "7"},
        "spec": nested(levels - 1),
    }
    assert levels > MAX_BODY_DEPTH + 1 or depth(body) == levels
    return body


@given(_VALUES, st.booleans())
def test_nesting_counts_the_brackets_outside_strings(value: object, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert nesting(text.encode()) == depth(value)
    assert decode_answer(text.encode()) == (
        value if isinstance(value, dict) else Refused("is not a JSON object")
    )


def test_nesting_is_counted_in_unfinished_text_as_far_as_a_decoder_reads() -> None:
    assert nesting(b'[["' + b'\\"' * 1000) == 2  # an unterminated string hides what follows
    assert nesting(b'["\\\\"[[[') == 4  # an escaped backslash, then the string ends
    assert nesting(b"[" * 100_000) == 100_000
    assert nesting(b"") == nesting(b"7") == 0


@given(st.binary(max_size=64), st.integers(min_value=0, max_value=MAX_BODY_DEPTH + 10))
def test_no_bytes_make_a_decoder_raise(data: bytes, levels: int) -> None:
    for body in (data, b"[" * levels + data, b'{"items":[' + b"[" * levels + data):
        decode_answer(body)
        decode_event(body)
        decode_list(body)


def test_an_answer_within_the_bound_is_decoded_and_one_past_it_refused_naming_it() -> None:
    edge = item("edge", MAX_BODY_DEPTH)
    assert decode_answer(dumps(edge)) == edge
    assert decode_answer(dumps(item("deep", MAX_BODY_DEPTH + 1))) == Refused(
        TOO_DEEP, namespace="app", name="deep", version="7"
    )
    assert decode_answer(dumps(item("deep", 5000))) == Refused(
        TOO_DEEP, namespace="app", name="deep", version="7"
    )
    assert decode_answer(b"") == {}
    assert decode_answer(b'{"kind":') == Refused("is not JSON")
    assert decode_answer(b'{"kind": "\xff"}') == Refused("is not JSON")


def test_an_object_past_the_compilers_bound_still_reaches_it() -> None:
    middling = item("middling", MAX_OBJECT_DEPTH * 2)
    assert decode_answer(dumps(middling)) == middling
    assert decode_event(dumps({"type": "ADDED", "object": middling})) == {
        "type": "ADDED",
        "object": middling,
    }


def test_a_watch_event_too_deep_is_named_by_its_type_and_object() -> None:
    edge = {"type": "MODIFIED", "object": item("edge", MAX_BODY_DEPTH)}
    assert decode_event(dumps(edge)) == edge
    for levels in (MAX_BODY_DEPTH + 1, 3000):
        deep = {"type": "DELETED", "object": item("deep", levels)}
        assert decode_event(dumps(deep)) == Refused(
            TOO_DEEP, event="DELETED", namespace="app", name="deep", version="7"
        )
    unnamed = {"type": "ADDED", "object": {"spec": nested(3000)}}
    assert decode_event(dumps(unnamed)) == Refused(TOO_DEEP, event="ADDED")


def test_a_list_refuses_only_its_items_too_deep() -> None:
    items: list[Any] = [
        item("a", 3),
        item("deep", 2000),
        item("edge", MAX_BODY_DEPTH),
        7,
        [nested(3000)],
        item("past", MAX_BODY_DEPTH + 1),
        item("z", 3),
    ]
    body = {"kind": "XList", "metadata": {"resourceVersion": "42"}, "items": items}
    assert decode_list(dumps(body)) == Listing(
        items=[items[0], items[2], items[6]],
        version="42",
        refused=[
            Refused(TOO_DEEP, namespace="app", name="deep", version="7"),
            Refused(TOO_DEEP),
            Refused(TOO_DEEP, namespace="app", name="past", version="7"),
        ],
    )
    shallow = {**body, "items": [items[0], 7, items[2]]}
    assert decode_list(dumps(shallow)) == Listing(items=[items[0], items[2]], version="42")


def test_a_list_that_cannot_be_read_as_a_whole_is_refused() -> None:
    assert decode_list(b'{"items": [') == Refused("is not JSON")
    assert decode_list(b"[" * 3000) == Refused(
        f"is a list nested deeper than {MAX_BODY_DEPTH} levels outside its items"
    )
    deep_metadata = {"metadata": nested(3000), "items": [item("a", 3)]}
    assert decode_list(dumps(deep_metadata)) == Refused(TOO_DEEP)


@given(
    st.dictionaries(_TRICKY.filter(lambda k: k not in ("items", "metadata")), _VALUES, max_size=3),
    st.lists(_VALUES | st.builds(item, _TRICKY.filter(bool), st.just(3)), max_size=5),
    st.sampled_from([None, 0, 2]),
    st.sampled_from([(",", ":"), (" ,\t", "\r\n: ")]),
)
def test_a_list_is_decoded_a_member_at_a_time_as_a_whole_decode_would(
    envelope: dict[str, Any],
    items: list[Any],
    indent: int | None,
    separators: tuple[str, str],
) -> None:
    """The page's top level and items are decoded one by one (so the interpreter lock changes
    hands between them), into what one decode of the whole page gives."""
    meta = {"resourceVersion": "42", "continue": "next"}
    body = {**envelope, "items": items, "metadata": meta}
    text = json.dumps(body, indent=indent, separators=separators).encode()
    assert decode_list(b" \n" + text + b"\t") == Listing(
        items=[i for i in items if isinstance(i, dict)], version="42", next="next"
    )


def test_a_list_that_is_not_json_is_refused_as_a_whole_decode_would() -> None:
    for text in (
        b'{"items": [1,]}',
        b'{"items": [1 2]}',
        b'{"items": [1,,2]}',
        b'{"a": 1,}',
        b'{"a": 1 "b": 2}',
        b'{"a" 1}',
        b"{1: 2}",
        b'{"items": []} []',
        b'{"items": []}}',
        b'{"items": [{}',
        b"{",
        b"",
    ):
        assert decode_list(text) == Refused("is not JSON"), text
    assert decode_list(b'{"items": {"a": 1}, "kind": "XList"}') == Listing(items=[], version="")
    assert decode_list(b"[]") == Refused("is not a JSON object")
