"""ingress-nginx access annotations: htpasswd hashes, the per-request checks, and failing
closed (docs/migrating-from-ingress-nginx.md, "Access")."""

from __future__ import annotations

import base64
import hashlib

import pytest
from pyrsistent import pvector

from coxswain.compile import SharedPool, build_state, compile
from coxswain.compile.snapshot import IngressActions
from coxswain.route import RequestHead, select
from coxswain.route.htpasswd import verify
from coxswain.route.ingress_access import AccessCheck
from tests.unit.ingress_world import (
    INGRESS_CLASS,
    htpasswd_secret,
    ingress,
    path,
    rule,
    service,
    table_of,
)

NGINX = "nginx.ingress.kubernetes.io/"
# made with `openssl passwd -apr1 -salt s4lt5alt secret`, `openssl passwd -1 -salt xyz secret`
# and bcrypt.hashpw(b"secret", bcrypt.gensalt(4))
APR1 = "$apr1$s4lt5alt$zK4L8gxLn4tRwoWC/Svhx."
MD5 = "$1$xyz$Qia9Wq6FxQkYcwNWMk/RM0"
BCRYPT = "$2b$04$OhC./YkJv6HebhIuSJy9XuRyMcv2685Q5P1WMxekNUGKKQE902uuO"
SHA = "{SHA}" + base64.b64encode(hashlib.sha1(b"secret").digest()).decode()


@pytest.mark.parametrize("hashed", [APR1, MD5, BCRYPT, SHA])
def test_each_htpasswd_format_checks_the_password(hashed: str) -> None:
    assert verify(b"secret", hashed)
    assert not verify(b"Secret", hashed)
    assert not verify(b"", hashed)


def test_unknown_formats_and_dear_bcrypt_costs_never_verify() -> None:
    assert not verify(b"secret", "secret")  # plain text
    assert not verify(b"secret", "abJnggxhB/yWI")  # DES crypt
    assert not verify(b"secret", BCRYPT.replace("$04$", "$13$"))


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def check(**fields: object) -> AccessCheck:
    return AccessCheck(IngressActions(**fields))  # type: ignore[arg-type]


def test_source_ranges_deny_first_then_allow() -> None:
    access = check(
        allow_sources=pvector(["10.0.0.0/8", "2001:db8::/32"]),
        deny_sources=pvector(["10.9.0.0/16"]),
    )
    assert access.refusal("10.1.2.3", None, None, verify) is None
    assert access.refusal("::ffff:10.1.2.3", None, None, verify) is None
    assert access.refusal("2001:db8::1", None, None, verify) is None
    assert access.refusal("10.9.0.1", None, None, verify).status == 403  # type: ignore[union-attr]
    assert access.refusal("192.0.2.1", None, None, verify).status == 403  # type: ignore[union-attr]
    assert access.refusal(None, None, None, verify).status == 403  # type: ignore[union-attr]


def test_basic_auth_asks_with_the_realm_and_admits_a_user() -> None:
    access = check(auth_realm="Staff", auth_users=pvector([("ann", APR1), ("bob", SHA)]))
    refused = access.refusal("10.0.0.1", None, None, verify)
    assert refused is not None
    assert (refused.status, refused.fields) == (
        401,
        ((b"www-authenticate", b'Basic realm="Staff"'),),
    )
    assert access.refusal("10.0.0.1", basic("ann", "secret"), None, verify) is None
    assert access.refusal("10.0.0.1", basic("bob", "secret"), None, verify) is None
    for wrong in (basic("ann", "nope"), basic("eve", "secret"), "Bearer x", "Basic !!"):
        assert access.refusal("10.0.0.1", wrong, None, verify).status == 401  # type: ignore[union-attr]


def test_a_declared_body_over_the_limit_gets_413() -> None:
    access = check(max_body=1024)
    assert access.refusal("10.0.0.1", None, 1024, verify) is None
    assert access.refusal("10.0.0.1", None, 1025, verify).status == 413  # type: ignore[union-attr]
    assert access.refusal("10.0.0.1", None, None, verify) is None


def actions_of(annotations: dict[str, str], *extra: dict[str, object]) -> IngressActions | None:
    shop = ingress("shop", rule("shop.example.com", path("/", "web")), annotations=annotations)
    state = build_state([INGRESS_CLASS, shop, *extra, *service("web")])
    snapshot = compile(state, SharedPool()).snapshot
    return snapshot.ingress.hosts["shop.example.com"].paths[0].actions


@pytest.mark.parametrize(
    ("annotations", "why"),
    [
        ({"whitelist-source-range": "10.0.0.0/8, nonsense"}, "nonsense"),
        ({"auth-type": "basic", "auth-secret": "missing"}, "has no auth key"),
        ({"auth-type": "basic", "auth-secret": "other/users"}, "outside"),
        ({"auth-type": "digest", "auth-secret": "users"}, "digest"),
        ({"auth-url": "http://$host/check"}, "nginx variables"),
        ({"auth-url": "ftp://auth.example/check"}, "not an http(s) URL"),
        ({"auth-url": "http://auth.example/", "auth-method": "FETCH"}, "not an HTTP method"),
        ({"auth-url": "http://a/", "auth-response-headers": "X-A, X:B"}, "header names"),
        ({"auth-url": "http://a/", "auth-cache-duration": "5 minutes"}, "[status ...] time"),
        ({"auth-tls-secret": "apps/ca"}, "no ca.crt"),
        ({"auth-tls-secret": "other/ca"}, "outside"),
    ],
)
def test_security_annotations_that_cannot_be_honoured_fail_closed(
    annotations: dict[str, str], why: str
) -> None:
    actions = actions_of({NGINX + k: v for k, v in annotations.items()})
    assert actions is not None
    assert actions.denied is not None
    assert why in actions.denied
    table = table_of(
        ingress(
            "shop",
            rule("shop.example.com", path("/", "web")),
            annotations={NGINX + k: v for k, v in annotations.items()},
        )
    )
    head = RequestHead(port=80, method="GET", target="/", host="shop.example.com")
    assert select(table, head).status == 503


def test_basic_auth_reads_the_htpasswd_secret_and_skips_unsupported_users() -> None:
    actions = actions_of(
        {
            NGINX + "auth-type": "basic",
            NGINX + "auth-secret": "users",
            NGINX + "auth-realm": 'Staff "only"',
            NGINX + "proxy-body-size": "8m",
        },
        htpasswd_secret(f"ann:{APR1}\n# comment\n\ncarl:abJnggxhB/yWI\nbob:{BCRYPT}\n"),
    )
    assert actions is not None
    assert actions.denied is None
    assert actions.auth_realm == "Staff only"
    assert list(actions.auth_users) == [("ann", APR1), ("bob", BCRYPT)]
    assert actions.max_body == 8 << 20


def test_backend_protocol_grpc_speaks_h2c_and_fcgi_fails_closed() -> None:
    shop = ingress(
        "shop",
        rule("shop.example.com", path("/", "web")),
        annotations={NGINX + "backend-protocol": "GRPC"},
    )
    snapshot = compile(build_state([INGRESS_CLASS, shop, *service("web")]), SharedPool()).snapshot
    (served,) = snapshot.ingress.hosts["shop.example.com"].paths
    assert (str(served.backend.protocol), served.actions) == ("h2c", None)
    actions = actions_of({NGINX + "backend-protocol": "FCGI"})
    assert actions is not None
    assert actions.denied is not None
    assert "backend-protocol" in actions.denied


def test_enable_cors_takes_ingress_nginx_defaults_and_refuses_what_it_cannot_honour() -> None:
    actions = actions_of({NGINX + "enable-cors": "true"})
    assert actions is not None
    assert actions.cors is not None
    assert list(actions.cors.allow_origins) == ["*"]
    assert "PATCH" in actions.cors.allow_methods
    assert "authorization" in actions.cors.allow_headers
    assert (actions.cors.allow_credentials, actions.cors.max_age) == (True, 1728000)
    bad = actions_of({NGINX + "enable-cors": "true", NGINX + "cors-allow-origin": "ftp://x"})
    assert bad is None
    assert actions_of({NGINX + "cors-allow-origin": "https://a.example"}) is None  # not enabled


def test_htpasswd_lines_at_their_bounds_and_the_one_finding_of_a_bad_line() -> None:
    at_512 = "w:{SHA}" + "x" * 505
    at_513 = "v:{SHA}" + "x" * 506
    lines = ["# comment", "", "u:{SHA}abc:def", at_512, at_513]
    lines += ["#"] * (2000 - len(lines)) + ["late:{SHA}x"]  # past 2 * MAX_USERS lines: unread
    shop = ingress(
        "shop",
        rule("shop.example.com", path("/", "web")),
        annotations={NGINX + "auth-type": "basic", NGINX + "auth-secret": "users"},
    )
    state = build_state([INGRESS_CLASS, shop, htpasswd_secret("\n".join(lines)), *service("web")])
    result = compile(state, SharedPool())
    actions = result.snapshot.ingress.hosts["shop.example.com"].paths[0].actions
    assert actions is not None
    assert list(actions.auth_users) == [("u", "{SHA}abc:def"), ("w", at_512[2:])]
    assert [d.message for d in result.diagnostics if d.key is not None] == [
        "line 5 of the Secret's auth key is not user:hash with a bcrypt, $apr1$, $1$ or {SHA} "
        "hash; that user cannot log in"
    ]
