"""A data-plane scope's text at its edges (``compile.scope.parse_scope``): ``shared`` or
exactly one ``namespace/name``, both parts non-empty; anything else is no scope."""

from __future__ import annotations

import pytest

from coxswain.compile.scope import GatewayScope, SharedPool, parse_scope


def test_shared_and_one_namespace_slash_name_are_scopes() -> None:
    assert parse_scope("shared") == SharedPool()
    assert parse_scope("infra/edge") == GatewayScope("infra", "edge")


@pytest.mark.parametrize("text", ["", "edge", "infra/", "/edge", "/", "a/b/c", "a//b", "Shared"])
def test_a_text_without_exactly_one_slash_between_two_parts_is_no_scope(text: str) -> None:
    assert parse_scope(text) is None
