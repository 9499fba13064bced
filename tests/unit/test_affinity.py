"""Cookie session affinity's choices (``coxswain.route.affinity``; ingress-nginx's sticky
balancers)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from coxswain.compile.snapshot import Affinity, Backend, Endpoint
from coxswain.route.affinity import cookie_field, sticky_endpoint, value_for

BACKEND = Backend(namespace="app", service="web", port=80)
ENDPOINTS = [Endpoint(f"10.0.0.{n}", 8080) for n in range(1, 5)]


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_a_balanced_key_keeps_its_endpoint_unless_a_new_one_wins_it(draw: int) -> None:
    balanced = Affinity()
    first, value = sticky_endpoint(balanced, BACKEND, ENDPOINTS, (), draw)
    assert value is not None
    cookie = ((b"cookie", b"INGRESSCOOKIE=" + value.encode()),)
    assert sticky_endpoint(balanced, BACKEND, ENDPOINTS, cookie, draw + 1) == (first, None)
    grown = [*ENDPOINTS, Endpoint("10.0.0.9", 8080)]
    assert sticky_endpoint(balanced, BACKEND, grown, cookie, 0)[0] in (first, grown[-1])


def test_a_persistent_key_names_its_endpoint_until_it_goes() -> None:
    persistent = Affinity(mode="persistent", cookie_name="route")
    chosen, value = sticky_endpoint(persistent, BACKEND, ENDPOINTS, (), 2)
    assert chosen == ENDPOINTS[2]
    assert value is not None
    cookie = ((b"cookie", f"x=1; route={value}".encode()),)
    assert sticky_endpoint(persistent, BACKEND, ENDPOINTS[::-1], cookie, 0) == (chosen, None)
    others = [e for e in ENDPOINTS if e != chosen]
    moved, again = sticky_endpoint(persistent, BACKEND, others, cookie, 0)
    assert moved == others[0]
    assert again is not None


def test_the_cookie_carries_ingress_nginx_s_attributes() -> None:
    affinity = Affinity(max_age=60, domain="example.com", samesite="None", secure=None)
    field = cookie_field(affinity, "k|b", path="/p", https=True, expires_at="Thu, 01 Jan 1970")
    assert field == (
        b"INGRESSCOOKIE=k|b; Expires=Thu, 01 Jan 1970; Max-Age=60; Domain=example.com; "
        b"Path=/p; Secure; HttpOnly; SameSite=None"
    )


OLD_CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/51.0.2704.103 Safari/537"
MOJAVE_SAFARI = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_6) AppleWebKit/605.1.15 Version/12.1 Safari/605"
)
MOJAVE_CHROME = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_6) Chrome/120.0 Safari/537.36"
IOS_12 = "Mozilla/5.0 (iPhone; CPU iPhone OS 12_4 like Mac OS X) Version/12.1.2 Mobile/15E148"
NEW_CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"


def test_conditional_samesite_none_leaves_it_out_for_the_browsers_that_mishandle_it() -> None:
    conditional = Affinity(samesite="None", conditional_samesite_none=True)

    def samesite(affinity: Affinity, agent: str | None) -> bool:
        field = cookie_field(
            affinity, "k|b", path="/", https=False, expires_at=None, user_agent=agent
        )
        return field.endswith(b"; SameSite=None")

    for refused in (OLD_CHROME, MOJAVE_SAFARI, IOS_12):
        assert not samesite(conditional, refused)
        assert samesite(Affinity(samesite="None"), refused)  # without the annotation: sent
    for taken in (NEW_CHROME, MOJAVE_CHROME, None, ""):
        assert samesite(conditional, taken)
    lax = Affinity(samesite="Lax", conditional_samesite_none=True)
    field = cookie_field(lax, "k|b", path="/", https=False, expires_at=None, user_agent=OLD_CHROME)
    assert field.endswith(b"; SameSite=Lax")  # only None is conditional


@given(st.integers(min_value=0, max_value=2**63 - 1), st.sampled_from(ENDPOINTS))
def test_the_value_for_a_served_endpoint_sends_its_client_there(
    draw: int, served: Endpoint
) -> None:
    for affinity in (Affinity(), Affinity(mode="persistent")):
        value = value_for(affinity, BACKEND, ENDPOINTS, served, draw)
        assert value is not None  # 1,024 draws for 4 endpoints
        cookie = ((b"cookie", b"INGRESSCOOKIE=" + value.encode()),)
        assert sticky_endpoint(affinity, BACKEND, ENDPOINTS, cookie, draw) == (served, None)
