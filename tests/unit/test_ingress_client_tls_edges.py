"""``compile.ingress.client_tls.read_client_tls`` at its edges
(docs/migrating-from-ingress-nginx.md, "Access and limits"): the verify depth from 1 to 99 (else
1), and the exact finding for an unknown verify mode."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

import pytest
import trustme

from coxswain.compile.ingress.client_tls import read_client_tls
from tests.unit.ingress_world import annotated

if TYPE_CHECKING:
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.keys import ObjectKey
    from coxswain.compile.snapshot import ClientTLS

CA = trustme.CA().cert_pem.bytes()


def client_tls(annotations: dict[str, str]) -> tuple[ClientTLS | None, list[str]]:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "ca", "namespace": "apps"},
        "type": "Opaque",
        "data": {"ca.crt": base64.b64encode(CA).decode()},
    }
    only, state = annotated({"auth-tls-secret": "ca", **annotations}, secret)
    problems: list[tuple[str, str]] = []
    found: list[Diagnostic] = []
    read: set[ObjectKey] = set()
    check = read_client_tls(only, state.secrets, problems, found, read)
    assert problems == []
    return check, [d.message for d in found]


@pytest.mark.parametrize(("depth", "read"), [("1", 1), ("2", 2), ("99", 99), ("0", 1), ("100", 1)])
def test_the_verify_depth_from_1_to_99_else_1(depth, read):
    check, found = client_tls({"auth-tls-verify-depth": depth})
    assert check is not None
    assert (check.depth, found) == (read, [])


def test_an_unknown_verify_mode_is_quoted_to_twenty_characters_and_on_applies():
    mode = "only-on-the-first-tuesday"
    check, found = client_tls({"auth-tls-verify-client": mode})
    assert check is not None
    assert check.verify == "on"
    assert found == [f"{mode[:20]!r} is not on, off, optional or optional_no_ca; on applies"]
