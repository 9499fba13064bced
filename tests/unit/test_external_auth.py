"""External authentication's pure half: the sub-request and what its answer decides
(``coxswain.route.external_auth``; ingress-nginx's ``auth_request`` location)."""

from __future__ import annotations

from pyrsistent import pvector

from coxswain.compile.snapshot import ExternalAuth
from coxswain.route.external_auth import (
    AuthOutcome,
    auth_outcome,
    auth_request,
    cache_key,
    cache_seconds,
    signin_location,
)

AUTH = ExternalAuth(
    url="http://auth.svc/verify?a=1",
    host="auth.svc",
    port=80,
    target="/verify?a=1",
    response_headers=pvector(["x-user"]),
)


def test_the_sub_request_drops_the_body_framing_and_hop_by_hop_fields_and_sets_its_own() -> None:
    request = auth_request(
        AUTH,
        method=b"POST",
        target=b"/cart?x=1",
        host_header=b"shop.example",
        scheme=b"https",
        client=b"10.0.0.9",
        headers=(
            (b"authorization", b"Bearer t"),
            (b"content-length", b"5"),
            (b"connection", b"x-secret"),
            (b"x-secret", b"hop"),
            (b"x-forwarded-for", b"6.6.6.6"),
            (b"x-original-url", b"forged"),
        ),
    )
    assert (request.method, request.target) == (b"GET", b"/verify?a=1")
    assert request.fields == [
        (b"host", b"auth.svc"),
        (b"authorization", b"Bearer t"),
        (b"x-original-url", b"https://shop.example/cart?x=1"),
        (b"x-original-method", b"POST"),
        (b"x-sent-from", b"nginx-ingress-controller"),
        (b"x-real-ip", b"10.0.0.9"),
        (b"x-forwarded-for", b"10.0.0.9"),
        (b"x-auth-request-redirect", b"/cart?x=1"),
    ]


def test_a_2xx_forwards_with_the_named_fields_and_any_other_status_answers() -> None:
    def outcome(status: int | None, *fields: tuple[bytes, bytes]) -> AuthOutcome:
        return auth_outcome(
            AUTH, status, fields, scheme="http", host_header="shop.example", request_uri="/p"
        )

    allowed = outcome(204, (b"X-User", b"ann"), (b"set-cookie", b"s=1"))
    assert allowed.status is None
    assert allowed.request_fields == ((b"x-user", b"ann"),)
    assert allowed.removed == {b"x-user"}
    assert allowed.fields == ((b"set-cookie", b"s=1"),)
    refused = outcome(401, (b"www-authenticate", b"Basic"), (b"set-cookie", b"s=1"))
    assert refused.status == 401
    assert refused.fields == ((b"www-authenticate", b"Basic"),)
    assert outcome(403).status == 403
    assert outcome(302).status == 500
    assert outcome(None).status == 500


def test_the_signin_url_gets_the_original_url_unless_it_names_the_parameter() -> None:
    def location(signin: str) -> str:
        auth = ExternalAuth(url="http://a/", host="a", port=80, target="/", signin=signin)
        return signin_location(
            auth, scheme="https", host_header="shop.example:8443", request_uri="/a b?c=d"
        )

    escaped = "https://shop.example:8443%2Fa%20b%3Fc%3Dd"
    assert location("https://login/") == f"https://login/?rd={escaped}"
    assert location("https://$host/start?x=1") == f"https://shop.example/start?x=1&rd={escaped}"
    assert location("/s?rd=$escaped_request_uri") == "/s?rd=%2Fa%20b%3Fc%3Dd"


def test_the_cache_key_expands_its_variables_and_the_durations_go_by_status() -> None:
    auth = ExternalAuth(
        url="http://a/",
        host="a",
        port=80,
        target="/",
        cache_key="$remote_addr|$http_x_token|$cookie_s|$uri|$host",
        cache_durations=pvector(["200:300", "any:5"]),
    )
    key = cache_key(
        auth,
        client="10.0.0.1",
        scheme="https",
        host_header="shop.example:8443",
        target="/p?q=1",
        headers=((b"x-token", b"t1"), (b"cookie", b"a=1; s=42")),
    )
    assert key == "10.0.0.1|t1|42|/p|shop.example"
    assert (cache_seconds(auth, 200), cache_seconds(auth, 403), cache_seconds(auth, None)) == (
        300,
        5,
        0,
    )
