"""compile.gateway.grpcroute: a gRPC service name may lead with one dot, never end with one."""

from __future__ import annotations

import pytest

from coxswain.compile.gateway.grpcroute import _is_service


@pytest.mark.parametrize(
    ("text", "valid"),
    [(".shop.Cart", True), ("shop.Cart", True), ("shop.Cart.", False), ("..shop.Cart", False)],
)
def test_a_service_name_is_dotted_identifiers_with_one_leading_dot_allowed(
    text: str, valid: bool
) -> None:
    assert _is_service(text) is valid
