"""Cookie session affinity at its edges (``coxswain.route.affinity``;
docs/migrating-from-ingress-nginx.md, "Session affinity"): the drawn key's exact form, a
cookie value holding more than one ``|``, the key search of ``change-on-failure`` at the top
of the draw's range and when the endpoints leave one hash each, ``secure`` against the
request's scheme, and text neither UTF-8 nor Latin-1 can hold, which the functions replace
rather than fail on (the pure packages are total)."""

from __future__ import annotations

import hashlib

from coxswain.compile.snapshot import Affinity, Backend, Endpoint
from coxswain.route.affinity import cookie_field, sticky_endpoint, value_for

BACKEND = Backend(namespace="app", service="web", port=80)
ENDPOINTS = [Endpoint(f"10.0.0.{n}", 8080) for n in range(1, 5)]
NAME = "app-web-80"
SUFFIX = (
    "|"
    + hashlib.md5(
        (hashlib.md5(NAME.encode()).hexdigest() + NAME).encode(), usedforsecurity=False
    ).hexdigest()
)


def winner(key: str, endpoints: list[Endpoint]) -> Endpoint:
    """The endpoint a balanced key hashes onto (rule 2), written from the rule."""
    return max(
        endpoints,
        key=lambda e: hashlib.md5(
            f"{key}|{e.address}:{e.port}".encode(), usedforsecurity=False
        ).hexdigest(),
    )


def test_a_balanced_request_without_the_cookie_gets_the_draw_as_its_key() -> None:
    endpoint, value = sticky_endpoint(Affinity(), BACKEND, ENDPOINTS, (), 255)
    assert value == "00000000000000ff" + SUFFIX
    assert endpoint == winner("00000000000000ff", ENDPOINTS)


def test_a_persistent_key_is_what_comes_before_the_first_bar() -> None:
    persistent = Affinity(mode="persistent", cookie_name="route")
    chosen, value = sticky_endpoint(persistent, BACKEND, ENDPOINTS, (), 1)
    assert value is not None
    cookie = ((b"cookie", f"route={value}|more".encode()),)
    assert sticky_endpoint(persistent, BACKEND, ENDPOINTS, cookie, 0) == (chosen, None)


def test_the_key_search_goes_up_from_the_draw_and_wraps_at_2_to_the_64() -> None:
    top = 2**64 - 1
    two = [ENDPOINTS[0], ENDPOINTS[3]]
    target = winner("0000000000000000", two)
    assert winner(f"{top:016x}", two) != target
    assert value_for(Affinity(), BACKEND, two, target, top) == "0000000000000000" + SUFFIX
    draw = 5
    target = winner(f"{draw + 1:016x}", two)
    assert winner(f"{draw:016x}", two) != target
    assert value_for(Affinity(), BACKEND, two, target, draw) == f"{draw + 1:016x}" + SUFFIX


def test_with_more_endpoints_than_half_the_hashes_the_search_tries_one_key() -> None:
    many = [Endpoint(f"10.{n // 256}.{n % 256}.1", 80) for n in range(2049)]
    draw = 0
    target = winner(f"{draw + 1:016x}", many)
    assert winner(f"{draw:016x}", many) != target
    assert value_for(Affinity(), BACKEND, many, target, draw) is None
    assert value_for(Affinity(), BACKEND, many, winner("0000000000000000", many), draw) == (
        "0000000000000000" + SUFFIX
    )


def test_secure_set_overrides_the_request_s_scheme_either_way() -> None:
    off = cookie_field(Affinity(secure=False), "k", path="/", https=True, expires_at=None)
    on = cookie_field(Affinity(secure=True), "k", path="/", https=False, expires_at=None)
    assert (off, on) == (
        b"INGRESSCOOKIE=k; Path=/; HttpOnly",
        b"INGRESSCOOKIE=k; Path=/; Secure; HttpOnly",
    )


def test_text_no_codec_holds_is_replaced_not_refused() -> None:
    field = cookie_field(Affinity(), "k", path="/\u20ac", https=False, expires_at=None)
    assert field == b"INGRESSCOOKIE=k; Path=/?; HttpOnly"
    lone = Endpoint("\ud800", 80)
    persistent = Affinity(mode="persistent")
    odd = hashlib.md5(f"{NAME}?:80".encode(), usedforsecurity=False).hexdigest()
    assert value_for(persistent, BACKEND, [lone], lone, 0) == odd + SUFFIX
