"""ingress-nginx's cookie affinity annotations read into ``Affinity``
(``compile.ingress.affinity.read_affinity``; docs/migrating-from-ingress-nginx.md, "Session
affinity"): each attribute from its own annotation, ingress-nginx's defaults, and the exact
finding for a value dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from coxswain.compile.ingress.affinity import read_affinity
from coxswain.compile.snapshot import Affinity
from tests.unit.ingress_world import annotated

if TYPE_CHECKING:
    from coxswain.compile.diagnostics import Diagnostic


def affinity(annotations: dict[str, str]) -> tuple[Affinity | None, list[str]]:
    """What one Ingress with these annotations reads as, and each finding's message."""
    only, _ = annotated(annotations)
    found: list[Diagnostic] = []
    read = read_affinity(only, found)
    return read, [d.message for d in found]


def test_a_cookie_with_ingress_nginx_s_defaults():
    assert affinity({"affinity": "cookie"}) == (Affinity(), [])
    assert Affinity() == Affinity(
        mode="balanced",
        cookie_name="INGRESSCOOKIE",
        path=None,
        domain=None,
        expires=0,
        max_age=0,
        samesite=None,
        secure=None,
        conditional_samesite_none=False,
        change_on_failure=False,
    )


def test_each_attribute_from_its_own_annotation():
    assert affinity(
        {
            "affinity": "cookie",
            "affinity-mode": "persistent",
            "session-cookie-name": "SESSION",
            "session-cookie-path": "/app",
            "session-cookie-domain": ".example.com",
            "session-cookie-expires": "3600",
            "session-cookie-max-age": "1800",
            "session-cookie-samesite": " STRICT ",
            "session-cookie-secure": "false",
            "session-cookie-conditional-samesite-none": "true",
            "session-cookie-change-on-failure": "true",
        }
    ) == (
        Affinity(
            mode="persistent",
            cookie_name="SESSION",
            path="/app",
            domain=".example.com",
            expires=3600,
            max_age=1800,
            samesite="Strict",
            secure=False,
            conditional_samesite_none=True,
            change_on_failure=True,
        ),
        [],
    )


@pytest.mark.parametrize(("written", "samesite"), [("none", "None"), ("Lax", "Lax")])
def test_samesite_is_read_whatever_its_case(written, samesite):
    read, found = affinity({"affinity": "cookie", "session-cookie-samesite": written})
    assert (read, found) == (Affinity(samesite=samesite), [])


def test_secure_true():
    read, _ = affinity({"affinity": "cookie", "session-cookie-secure": "true"})
    assert read == Affinity(secure=True)


def test_another_kind_turns_affinity_off_saying_so():
    kind = "a-kind-ingress-nginx-does-not-know"
    assert affinity({"affinity": kind}) == (
        None,
        [f"{kind[:20]!r} is not cookie; the Ingress gets no session affinity"],
    )


def test_an_unknown_samesite_is_dropped_saying_so():
    written = "sometimes-and-only-on-tuesdays"
    assert affinity({"affinity": "cookie", "session-cookie-samesite": written}) == (
        Affinity(),
        [f"{written[:20]!r} is not None, Lax or Strict; it is dropped"],
    )
