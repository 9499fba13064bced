"""The fast YAML construction builds what PyYAML's safe loader builds, errors included."""

from __future__ import annotations

import datetime as dt
import textwrap

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile.model.manifests_yaml import Loader, construct


def fast(text: str) -> list[object]:
    loader = Loader(text)
    try:
        found = []
        while loader.check_node():
            found.append(construct(loader, loader.get_node(), anchored=False))
        return found
    finally:
        loader.dispose()


def pyyaml(text: str) -> list[object]:
    return list(yaml.load_all(text, Loader=yaml.CSafeLoader))


def outcome(load: object, text: str) -> object:
    """What ``load(text)`` gives, or its error's type and line."""
    try:
        return load(text)  # type: ignore[operator]
    except yaml.MarkedYAMLError as err:
        return type(err), err.problem_mark and err.problem_mark.line


SCALARS = [
    "name",
    "80",
    "-1",
    "0x1f",
    "1_000",
    "1.5",
    ".inf",
    "1e3",
    "true",
    "no",
    "Off",
    "y",
    "~",
    "null",
    "",
    "2026-01-01",
    "2026-01-01T10:00:00Z",
    "<<",
    "=",
    "+1",
    "'80'",
    '"true"',
    "!!str 80",
    "!!int '7'",
    "!!binary aGVsbG8=",
    "!!float 1",
    "ńame",
]


@pytest.mark.parametrize("scalar", SCALARS)
def test_a_scalar_is_what_pyyaml_makes_of_it_as_a_value_a_key_and_an_item(scalar):
    for text in (f"k: {scalar}\n", f"{scalar}: v\n", f"- {scalar}\n- [{scalar}]\n", scalar):
        assert outcome(fast, text) == outcome(pyyaml, text), text


def test_merge_keys_explicit_tags_and_collections_come_out_as_pyyaml_builds_them():
    text = textwrap.dedent(
        """\
        a: {<<: {x: 1, y: 2}, y: 3}
        b: !!set {p, q}
        c: !!omap [{one: 1}, {two: 2}]
        d: [1, [2, [3, {e: f}]]]
        e: !!map {k: v}
        dup: 1
        dup: 2
        ? 7
        : seven
        when: 2026-01-01 10:00:00
        ---
        - plain
        ---
        """
    )
    assert fast(text) == pyyaml(text)
    assert fast(text)[0]["when"] == dt.datetime(2026, 1, 1, 10, 0)  # type: ignore[index]


def test_a_document_nested_past_the_recursion_limit_is_built_without_recursion():
    depth = 900
    text = "[" * depth + "]" * depth
    built = fast(text)[0]
    for _ in range(depth - 1):
        assert isinstance(built, list)
        assert len(built) == 1
        built = built[0]
    assert built == []


@pytest.mark.parametrize(
    "text",
    [
        "? [a, b]\n: c\n",  # a sequence as a key: unhashable
        "k: !unknown x\n",
        "!!map scalar\n",
        "!!seq {a: b}\n",
    ],
)
def test_what_pyyaml_refuses_is_refused_with_its_error(text):
    with pytest.raises(yaml.constructor.ConstructorError) as theirs:
        pyyaml(text)
    with pytest.raises(yaml.constructor.ConstructorError) as ours:
        fast(text)
    assert ours.value.problem_mark.line == theirs.value.problem_mark.line  # type: ignore[union-attr]


def test_the_tag_memo_answers_a_repeated_claimed_scalar_as_the_first_time():
    text = "".join(f"- {word}\n" for word in ["no", "name", "no", "80", "name", "80", "null"] * 3)
    assert fast(text) == pyyaml(text) == [[False, "name", False, 80, "name", 80, None] * 3]


_KEYS = st.text(alphabet="abnoty019-_.~ ", min_size=0, max_size=6)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _KEYS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)


@given(_VALUES, st.sampled_from([False, None, True]))
def test_any_dumped_value_reads_back_as_pyyaml_reads_it(value, flow):
    text = yaml.safe_dump_all([value, {"items": [value]}], default_flow_style=flow)
    assert fast(text) == pyyaml(text)


@pytest.mark.parametrize(
    "text",
    ["k: !!int x\n", "k: !!float x\n", "k: !!timestamp x\n", "k: !!bool x\n", "k: " + "1" * 5000],
)
@pytest.mark.parametrize("anchored", [False, True])
def test_a_scalar_pyyaml_cannot_build_is_a_constructor_error_at_its_line(text, anchored):
    loader = Loader("a: 1\n" + text)
    with pytest.raises(yaml.constructor.ConstructorError) as err:
        construct(loader, loader.get_single_node(), anchored=anchored)
    loader.dispose()
    assert err.value.problem_mark.line == (0 if anchored else 1)  # type: ignore[union-attr]
