"""ingress-nginx's external authentication annotations read at their edges
(``compile.ingress.external_auth``; docs/migrating-from-ingress-nginx.md, "External
authentication"): the URL's length, port and scheme bounds, the defaults each annotation falls
back to, and the exact words of each problem and finding."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyrsistent import pmap, pvector

from coxswain.compile.ingress.external_auth import MAX_HEADERS, MAX_URL, read_external_auth
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.model.objects import Ingress, Meta

if TYPE_CHECKING:
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.snapshot import ExternalAuth

PREFIX = "nginx.ingress.kubernetes.io/"


def read(**annotations: str) -> tuple[ExternalAuth | None, list[tuple[str, str]], list[str]]:
    """The auth read from ``annotations`` (names with ``_`` for ``-``), the problems and the
    findings' messages."""
    meta = Meta(
        key=ObjectKey("Ingress", "ns", "web"),
        annotations=pmap({PREFIX + k.replace("_", "-"): v for k, v in annotations.items()}),
    )
    problems: list[tuple[str, str]] = []
    found: list[Diagnostic] = []
    auth = read_external_auth(Ingress(meta=meta), problems, found)
    return auth, problems, [d.message for d in found]


def refused(url: str, **annotations: str) -> list[tuple[str, str]]:
    auth, problems, _ = read(auth_url=url, **annotations)
    assert auth is None
    return problems


def accepted(url: str = "http://auth", **annotations: str) -> tuple[ExternalAuth, list[str]]:
    auth, problems, found = read(auth_url=url, **annotations)
    assert problems == []
    assert auth is not None
    return auth, found


def test_the_auth_url_s_problems_say_what_is_wrong_with_the_value_cut_to_80() -> None:
    key = PREFIX + "auth-url"
    long = "ftp://" + "a" * 100
    assert refused("") == [(key, "'' is empty")]
    assert refused("ftp://x") == [(key, "'ftp://x' is not an http(s) URL")]
    assert refused("/verify") == [(key, "'/verify' is not an http(s) URL")]
    assert refused(long) == [(key, f"{long[:80]!r} is not an http(s) URL")]
    assert refused("http://a b") == [
        (key, "'http://a b' holds a space, a control character or a non-ASCII character")
    ]
    assert refused("http://a/$b$a") == [
        (key, "'http://a/$b$a' names nginx variables Coxswain does not expand: a, b")
    ]
    unparsed = "http://a:99999/" + "p" * 100
    assert refused(unparsed) == [
        (key, f"{unparsed[:80]!r} is not http(s)://host[:port][/path][?query]")
    ]


def test_the_auth_url_may_be_max_url_long_and_its_port_1_to_65535() -> None:
    exact = "http://a/" + "p" * (MAX_URL - 9)
    assert accepted(exact)[0].target == "/" + "p" * (MAX_URL - 9)
    assert refused(exact + "p") == [
        (PREFIX + "auth-url", f"{(exact + 'p')[:80]!r} is longer than {MAX_URL} characters")
    ]
    assert accepted("http://a:65535")[0].port == 65535
    assert accepted("http://a:1")[0].port == 1
    for url in ("http://a:65536", "http://a:70000", "http://a:0"):
        assert refused(url) == [
            (PREFIX + "auth-url", f"{url!r} is not http(s)://host[:port][/path][?query]")
        ]


def test_the_auth_url_s_port_and_target_default_by_scheme() -> None:
    plain = accepted("http://Auth")[0]
    assert (plain.host, plain.port, plain.target, plain.tls) == ("auth", 80, "/", False)
    secure = accepted("https://auth?x=1")[0]
    assert (secure.port, secure.target, secure.tls) == (443, "/?x=1", True)


def test_a_bad_method_and_header_list_are_problems_with_their_exact_words() -> None:
    method = "M" * 25
    assert refused("http://a", auth_method=method) == [
        (PREFIX + "auth-method", f"{method[:20]!r} is not an HTTP method")
    ]
    assert refused("http://a", auth_response_headers="x-a, b c") == [
        (PREFIX + "auth-response-headers", "is not a list of header names")
    ]


def test_up_to_max_headers_response_headers_are_read() -> None:
    names = [f"x-{i}" for i in range(MAX_HEADERS)]
    auth, _ = accepted(auth_response_headers=",".join(names))
    assert auth.response_headers == pvector(names)
    assert refused("http://a", auth_response_headers=",".join([*names, "x-last"])) == [
        (PREFIX + "auth-response-headers", "is not a list of header names")
    ]


def test_the_request_redirect_is_a_url_or_an_absolute_path_without_dollar() -> None:
    assert accepted(auth_request_redirect=" /after ")[0].request_redirect == "/after"
    assert accepted(auth_request_redirect="https://b/c")[0].request_redirect == "https://b/c"
    for bad in ("/a$host", "ftp://x", "after"):
        assert refused("http://a", auth_request_redirect=bad) == [
            (
                PREFIX + "auth-request-redirect",
                "is not an http(s) URL or an absolute path without $",
            )
        ]


def test_the_signin_url_is_a_url_or_an_absolute_path_else_a_finding() -> None:
    assert accepted(auth_signin="/login?u=$host")[0].signin == "/login?u=$host"
    long = "ftp://" + "a" * 100
    for bad, problem in (
        ("login", "is not an http(s) URL or an absolute path"),
        (long, "is not an http(s) URL or an absolute path"),
        ("/login?u=$remote_addr", "names nginx variables Coxswain does not expand: remote_addr"),
    ):
        auth, found = accepted(auth_signin=bad)
        assert auth.signin is None
        assert found == [f"{bad[:80]!r} {problem}; a 401 is passed back as is"]


def test_the_signin_parameter_defaults_to_rd_and_a_bad_one_falls_back_to_it() -> None:
    assert accepted()[0].signin_param == "rd"
    assert accepted(auth_signin_redirect_param=" next ")[0].signin_param == "next"
    bad = "!" * 45
    auth, found = accepted(auth_signin_redirect_param=bad)
    assert auth.signin_param == "rd"
    assert found == [f"{bad[:40]!r} is not a parameter name; rd applies"]


def test_always_set_cookie_is_true_or_false_in_any_case_else_false_with_a_finding() -> None:
    assert accepted()[0].always_set_cookie is False
    for value, expected in ((" TRUE ", True), ("true", True), ("FALSE", False), ("false", False)):
        auth, found = accepted(auth_always_set_cookie=value)
        assert (auth.always_set_cookie, found) == (expected, [])
    bad = "y" * 25
    auth, found = accepted(auth_always_set_cookie=bad)
    assert auth.always_set_cookie is False
    assert found == [f"{bad[:20]!r} is not true or false; false applies"]


def test_the_cache_key_expands_http_and_cookie_variables_up_to_max_url() -> None:
    key = "$host$http_x_user$cookie_session"
    assert accepted(auth_cache_key=key)[0].cache_key == key
    assert accepted(auth_cache_key="  ")[0].cache_key is None
    exact = "k" * MAX_URL
    assert accepted(auth_cache_key=exact)[0].cache_key == exact
    auth, found = accepted(auth_cache_key=exact + "k")
    assert auth.cache_key is None
    assert found == [
        "names nginx variables Coxswain does not expand: ; auth responses are not remembered"
    ]
    auth, found = accepted(auth_cache_key="$uri$zeta$alpha")
    assert (auth.cache_key, auth.cache_durations) == (None, pvector())
    assert found == [
        "names nginx variables Coxswain does not expand: alpha, zeta;"
        " auth responses are not remembered"
    ]


def test_the_cache_durations_default_and_a_time_alone_is_for_200_301_302() -> None:
    default = pvector(["200:300", "202:300", "401:300"])
    assert accepted(auth_cache_key="$uri")[0].cache_durations == default
    assert accepted(auth_cache_key="$uri", auth_cache_duration=" ")[0].cache_durations == default
    assert accepted(auth_cache_key="$uri", auth_cache_duration="1M, any 2ms")[
        0
    ].cache_durations == pvector(["200:2.592e+06", "301:2.592e+06", "302:2.592e+06", "any:0.002"])
    bad = "200 " * 12 + "soon"
    assert refused("http://a", auth_cache_key="$uri", auth_cache_duration=bad) == [
        (PREFIX + "auth-cache-duration", f"{bad[:40]!r} is not [status ...] time")
    ]
    assert refused("http://a", auth_cache_duration="ANY 5m") == [
        (PREFIX + "auth-cache-duration", "'ANY 5m' is not [status ...] time")
    ]
