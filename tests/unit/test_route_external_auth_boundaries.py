"""External authentication's pure half at its edges (``coxswain.route.external_auth``;
docs/migrating-from-ingress-nginx.md, "External authentication"): the 2xx bounds, the signin
redirect and the refusals with their exact fields and reasons, the sub-request with
``auth-method`` and ``auth-request-redirect``, and every variable of the signin URL and the
cache key, with a port, without one and with an IPv6 literal."""

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

URL = "http://auth.svc/verify"
AUTH = ExternalAuth(
    url=URL,
    host="auth.svc",
    port=80,
    target="/verify",
    response_headers=pvector(["x-user"]),
)
SIGNIN = ExternalAuth(url=URL, host="auth.svc", port=80, target="/verify", signin="/login")


def outcome(
    status: int | None, *fields: tuple[bytes, bytes], auth: ExternalAuth = AUTH
) -> AuthOutcome:
    return auth_outcome(
        auth, status, fields, scheme="https", host_header="shop.example", request_uri="/p?q"
    )


def test_200_to_299_forward_and_300_answers_500_with_the_status_said() -> None:
    for status in (200, 299):
        assert outcome(status, (b"x-user", b"ann")) == AuthOutcome(
            None,
            f"authorized by {URL}",
            request_fields=((b"x-user", b"ann"),),
            removed=frozenset({b"x-user"}),
        )
    assert outcome(300) == AuthOutcome(500, f"the auth service {URL} gave status 300")
    assert outcome(None) == AuthOutcome(500, f"the auth service {URL} gave no answer")


def test_a_response_field_given_twice_is_forwarded_joined_with_a_comma() -> None:
    forwarded = outcome(200, (b"x-user", b"ann"), (b"X-User", b"bob"))
    assert forwarded.request_fields == ((b"x-user", b"ann, bob"),)


def test_only_a_401_redirects_to_signin_with_the_cookies_and_the_location() -> None:
    cookie = (b"set-cookie", b"s=1")
    assert outcome(401, cookie, auth=SIGNIN) == AuthOutcome(
        302,
        f"not authenticated by {URL}: redirected to sign in",
        fields=(cookie,),
        location="/login?rd=https://shop.example%2Fp%3Fq",
    )
    assert outcome(403, cookie, auth=SIGNIN) == AuthOutcome(403, f"refused by {URL} (403)")
    assert outcome(402, auth=SIGNIN).status == 500


def test_always_set_cookie_adds_the_cookies_to_a_refusal_after_the_challenge() -> None:
    auth = ExternalAuth(url=URL, host="auth.svc", port=80, target="/", always_set_cookie=True)
    fields = ((b"set-cookie", b"s=1"), (b"www-authenticate", b"Basic"))
    assert outcome(401, *fields, auth=auth).fields == (
        (b"www-authenticate", b"Basic"),
        (b"set-cookie", b"s=1"),
    )


def test_with_auth_method_and_request_redirect_the_sub_request_names_them() -> None:
    auth = ExternalAuth(
        url=URL,
        host="auth.svc",
        port=80,
        target="/verify",
        method="POST",
        request_redirect="https://back/here",
    )
    request = auth_request(
        auth,
        method=b"PUT",
        target=b"/cart",
        host_header=b"shop.example",
        scheme=b"http",
        client=None,
        headers=((b"accept", b"*/*"),),
    )
    assert (request.method, request.target) == (b"POST", b"/verify")
    assert request.fields == [
        (b"host", b"auth.svc"),
        (b"accept", b"*/*"),
        (b"x-original-url", b"http://shop.example/cart"),
        (b"x-original-method", b"PUT"),
        (b"x-sent-from", b"nginx-ingress-controller"),
        (b"x-auth-request-redirect", b"https://back/here"),
        (b"x-original-uri", b"/cart"),
        (b"x-scheme", b"http"),
    ]


def location(signin: str, host_header: str = "shop.example", param: str = "rd") -> str:
    auth = ExternalAuth(url=URL, host="a", port=80, target="/", signin=signin, signin_param=param)
    return signin_location(auth, scheme="https", host_header=host_header, request_uri="/p?q")


def test_the_signin_variables_expand_and_an_unknown_one_stays_as_written() -> None:
    every = "/s?rd=x&v=$host/$http_host/$scheme/$request_uri/$other"
    assert location(every) == "/s?rd=x&v=shop.example/shop.example/https//p?q/$other"
    assert location("/s/$host?rd=x", "[::1]") == "/s/[::1]?rd=x"
    assert location("/s/$host?rd=x", "[::1]:8443") == "/s/[::1]?rd=x"


def test_the_signin_parameter_counts_only_with_a_value_and_before_the_fragment() -> None:
    request = "https://shop.example%2Fp%3Fq"
    assert location("/s?rd=") == f"/s?rd=&rd={request}"
    assert location("/s?abcd") == f"/s?abcd&rd={request}"
    assert location("/s?next", param="n") == f"/s?next&n={request}"
    assert location("/s?a=1&rd=x") == "/s?a=1&rd=x"
    assert location("/s#f?rd=x") == f"/s#f?rd=x?rd={request}"


def key(text: str, *, client: str | None = "10.0.0.1", host_header: str = "shop.example") -> str:
    auth = ExternalAuth(url=URL, host="a", port=80, target="/", cache_key=text)
    return cache_key(
        auth,
        client=client,
        scheme="https",
        host_header=host_header,
        target="/p?q=1?r",
        headers=((b"x-token", b"t1"), (b"X-Token", b"t2")),
    )


def test_every_cache_key_variable_expands_and_a_missing_one_is_empty() -> None:
    assert key("$scheme|$request_uri|$uri|$args|$http_x_token") == (
        "https|/p?q=1?r|/p|q=1?r|t1, t2"
    )
    assert key("[$remote_addr|$cookie_s|$http_x_none|$other]", client=None) == "[|||]"
    assert key("$host") == "shop.example"
    assert key("$host", host_header="[::1]") == "[::1]"
    assert key("$host", host_header="[::1]:8443") == "[::1]"


def test_a_status_no_duration_names_is_not_remembered() -> None:
    auth = ExternalAuth(
        url=URL, host="a", port=80, target="/", cache_durations=pvector(["200:300"])
    )
    assert (cache_seconds(auth, 200), cache_seconds(auth, 403)) == (300, 0)
