"""HTTP field names and values at their edges (``compile.http_fields``; RFC 9110 section 5.1
tokens, section 5.5 values): one to 256 token characters for a name, at most 4,096 characters
for a value."""

from __future__ import annotations

from coxswain.compile.http_fields import (
    MAX_FIELD_NAME,
    MAX_FIELD_VALUE,
    is_field_name,
    is_field_value,
)


def test_a_field_name_is_one_to_max_field_name_token_characters() -> None:
    assert (MAX_FIELD_NAME, MAX_FIELD_VALUE) == (256, 4096)
    assert not is_field_name("")
    assert is_field_name("a")
    assert is_field_name("x" * MAX_FIELD_NAME)
    assert not is_field_name("x" * (MAX_FIELD_NAME + 1))
    assert not is_field_name("x y")


def test_a_field_value_is_at_most_max_field_value_characters() -> None:
    assert is_field_value("")
    assert is_field_value("v" * MAX_FIELD_VALUE)
    assert not is_field_value("v" * (MAX_FIELD_VALUE + 1))
    assert not is_field_value(" v")
