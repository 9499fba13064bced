"""The field check (coxswain/http2/fields.py) against the grammar it implements, written as
regular expressions from RFC 9110 §5.1 and §5.5 (a lower-case token for a name, RFC 9113
§8.2.1; a value of visible ASCII, obs-text, space and tab, without whitespace at its ends):
random names and values, biased towards the bytes at the edges of each set."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from coxswain.http2.fields import field_problem

TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9a-z]+")
VALUE = re.compile(rb"(?:[\x21-\x7e\x80-\xff](?:[\t\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?")
EDGES = b"\x00\t\n \x1f!(:AZaz09-~\x7f\x80\xff"
TEXT = st.one_of(
    st.binary(max_size=12),
    st.lists(st.sampled_from(list(EDGES)), max_size=4).map(bytes),
)


@given(TEXT, TEXT)
@example(b"a", b"a\t")
@example(b"a", b"\ta")
@example(b"a", b"a ")
@example(b"a", b" ")
@example(b"a", b" a")
@example(b"a", b"a\x7fa")
@example(b"a", b"\x80\t\xff")
@example(b"a-b", b"")
@example(b"", b"a")
@example(b"a:", b"a")
@example(b"aZ", b"a")
def test_a_field_is_refused_exactly_where_the_grammar_refuses_it(name: bytes, value: bytes) -> None:
    problem = field_problem(name, value)
    if TOKEN.fullmatch(name) is None:
        assert problem is not None
        assert problem.startswith("invalid field name")
    elif VALUE.fullmatch(value) is None:
        assert problem is not None
        assert problem.startswith("invalid value")
    else:
        assert problem is None or "connection-specific" in problem or "te other" in problem
