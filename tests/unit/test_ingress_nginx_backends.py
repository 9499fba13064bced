"""ingress-nginx's backend annotations compiled: ``backend-protocol`` HTTPS and GRPCS with the
``proxy-ssl-*`` settings (docs/migrating-from-ingress-nginx.md, "Backends")."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import pytest
import trustme

from coxswain.compile import SharedPool, build_state, compile
from tests.unit.ingress_world import INGRESS_CLASS, ingress, path, rule, service

if TYPE_CHECKING:
    from coxswain.compile.snapshot import Backend

NGINX = "nginx.ingress.kubernetes.io/"
OWN = "coxswain-labs.dev/"


def _secret(name: str, **data: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "apps"},
        "type": "Opaque",
        "data": {k.replace("_", "."): base64.b64encode(v).decode() for k, v in data.items()},
    }


def _compiled(annotations: dict[str, str], *extra: dict[str, Any]) -> tuple[Backend, list[str]]:
    shop = ingress(
        "shop", rule("shop.example.com", path("/", "web")), default="web", annotations=annotations
    )
    result = compile(build_state([INGRESS_CLASS, shop, *extra, *service("web")]), SharedPool())
    host = result.snapshot.ingress.hosts["shop.example.com"]
    assert host.default is not None
    assert host.default.backend == host.paths[0].backend  # the default backend too
    found = [f"{d.reason}: {d.message}" for d in result.diagnostics if d.key.kind == "Ingress"]
    return host.paths[0].backend, found


@pytest.mark.parametrize(
    ("value", "protocol", "tls"),
    [
        ("HTTP", "http1", False),
        ("GRPC", "h2c", False),
        ("https", "http1", True),
        ("GRPCS", "h2c", True),
    ],
)
def test_backend_protocol_sets_the_protocol_and_tls(value: str, protocol: str, tls: bool) -> None:
    backend, found = _compiled({NGINX + "backend-protocol": value})
    assert (str(backend.protocol), backend.tls is not None, backend.valid) == (protocol, tls, True)
    assert found == []


def test_without_a_secret_the_certificate_is_taken_unchecked_and_no_name_is_sent() -> None:
    backend, _ = _compiled({OWN + "backend-protocol": "HTTPS", NGINX + "proxy-ssl-verify": "on"})
    assert backend.tls is not None
    assert (backend.tls.verify, backend.tls.sni, backend.tls.ca_pem) == (False, False, None)
    assert backend.tls.server_name == "web.apps.svc"
    assert backend.tls.policy == "Ingress apps/shop"


def test_the_secret_brings_trust_and_a_client_certificate_and_the_settings_apply() -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("coxswain.example.com")
    secret = _secret(
        "backend-tls",
        ca_crt=ca.cert_pem.bytes(),
        tls_crt=b"".join(b.bytes() for b in leaf.cert_chain_pems),
        tls_key=leaf.private_key_pem.bytes(),
    )
    annotations = {
        NGINX + "backend-protocol": "GRPCS",
        NGINX + "proxy-ssl-secret": "apps/backend-tls",
        NGINX + "proxy-ssl-verify": "on",
        NGINX + "proxy-ssl-name": "Web.Internal",
        NGINX + "proxy-ssl-server-name": "on",
        NGINX + "proxy-ssl-verify-depth": "2",
    }
    backend, found = _compiled(annotations, secret)
    tls = backend.tls
    assert tls is not None
    assert (tls.verify, tls.sni, tls.server_name) == (True, True, "web.internal")
    assert tls.ca_pem == ca.cert_pem.bytes().decode()
    assert tls.client_certificate is not None
    assert tls.client_certificate.secret == "apps/backend-tls"
    assert found == []
    defaults, _ = _compiled({**annotations, NGINX + "proxy-ssl-name": "$host"}, secret)
    assert defaults.tls is not None
    assert defaults.tls.server_name == "web.apps.svc"


def test_a_secret_without_ca_applies_nothing_and_bad_values_take_the_defaults() -> None:
    annotations = {
        NGINX + "backend-protocol": "HTTPS",
        NGINX + "proxy-ssl-secret": "bare",
        NGINX + "proxy-ssl-verify": "yes",
    }
    backend, found = _compiled(annotations, _secret("bare", other=b"x"))
    assert backend.tls is not None
    assert not backend.tls.verify
    assert any("has no ca.crt" in f for f in found)
    with_ca = _secret("bare", ca_crt=trustme.CA().cert_pem.bytes())
    backend, found = _compiled({**annotations, NGINX + "proxy-ssl-verify-depth": "x"}, with_ca)
    assert backend.tls is not None
    assert not backend.tls.verify
    assert backend.tls.client_certificate is None
    assert sorted(f.split(":")[0] for f in found) == ["InvalidAnnotation"] * 2


@pytest.mark.parametrize(
    ("secret", "why"), [("other/backend-tls", "outside"), ("missing", "does not exist")]
)
def test_a_missing_or_foreign_secret_fails_closed(secret: str, why: str) -> None:
    annotations = {NGINX + "backend-protocol": "HTTPS", NGINX + "proxy-ssl-secret": secret}
    backend, found = _compiled(annotations)
    assert not backend.valid
    assert backend.tls is not None
    assert backend.tls.problem is not None
    assert why in backend.tls.problem
    assert any(why in f and "503" in f for f in found)


def test_service_upstream_makes_the_cluster_ip_the_one_endpoint() -> None:
    shop = ingress(
        "shop",
        rule("shop.example.com", path("/", "web"), path("/headless", "none")),
        annotations={OWN + "service-upstream": "true"},
    )
    web, web_slice = service("web")
    web["spec"]["clusterIP"] = "10.96.0.7"
    headless, headless_slice = service("none")
    headless["spec"]["clusterIP"] = "None"
    objects = [INGRESS_CLASS, shop, web, web_slice, headless, headless_slice]
    snapshot = compile(build_state(objects), SharedPool()).snapshot
    first, second = snapshot.ingress.hosts["shop.example.com"].paths
    assert (first.backend.cluster_ip, first.backend.endpoints_key) == (
        True,
        "apps/none/80/cluster-ip",
    )
    assert [(e.address, e.port) for e in snapshot.endpoints["apps/web/80/cluster-ip"]] == [
        ("10.96.0.7", 80)
    ]
    assert list(snapshot.endpoints["apps/none/80/cluster-ip"]) == []  # headless: 503
    assert "apps/web/80" not in snapshot.endpoints
    assert second.backend.service == "web"


def test_ssl_passthrough_takes_each_hosts_root_path_and_reports_the_others() -> None:
    passed = ingress(
        "pass",
        rule("pass.example.com", path("/", "web"), path("/api", "web")),
        rule("deep.example.com", path("/deep", "web")),
        rule(None, path("/", "web")),
        annotations={NGINX + "ssl-passthrough": "true"},
    )
    result = compile(build_state([INGRESS_CLASS, passed, *service("web")]), SharedPool())
    hosts = result.snapshot.ingress.hosts
    rule_passed = hosts["pass.example.com"].passthrough
    assert rule_passed is not None
    assert (rule_passed.path, rule_passed.backend.service) == ("/", "web")
    assert hosts["deep.example.com"].passthrough is None
    assert hosts["*"].passthrough is None
    found = [d.message for d in result.diagnostics if d.reason == "PassthroughNotApplied"]
    assert len(found) == 2
    assert any("deep.example.com" in m for m in found)
    assert any("catch-all" in m for m in found)


def test_configmap_defaults_stand_in_for_annotations_an_ingress_does_not_set() -> None:
    from coxswain.compile import CompileConfig
    from coxswain.compile.config import IngressDefaults

    config = CompileConfig(
        ingress_defaults=IngressDefaults(
            body_size=1 << 20, read_timeout=120, send_timeout=30, ssl_redirect=False
        )
    )
    own = ingress(
        "own",
        rule("own.example.com", path("/", "web")),
        annotations={NGINX + "proxy-body-size": "0", NGINX + "proxy-read-timeout": "5"},
    )
    leaf = trustme.CA().issue_cert("bare.example.com")
    bare_tls = _secret(
        "bare-tls",
        tls_crt=b"".join(b.bytes() for b in leaf.cert_chain_pems),
        tls_key=leaf.private_key_pem.bytes(),
    )
    bare_tls["type"] = "kubernetes.io/tls"
    bare = ingress(
        "bare",
        rule("bare.example.com", path("/", "web")),
        tls=[{"hosts": ["bare.example.com"], "secretName": "bare-tls"}],
    )
    objects = [INGRESS_CLASS, own, bare, bare_tls, *service("web")]
    hosts = compile(build_state(objects), SharedPool(), config).snapshot.ingress.hosts
    own_actions = hosts["own.example.com"].paths[0].actions
    bare_actions = hosts["bare.example.com"].paths[0].actions
    assert own_actions is not None
    assert bare_actions is not None
    assert (own_actions.max_body, own_actions.read_timeout, own_actions.send_timeout) == (
        0,
        5,
        30,
    )
    assert (bare_actions.max_body, bare_actions.read_timeout) == (1 << 20, 120)
    assert not hosts["bare.example.com"].paths[0].tls_redirect  # ssl-redirect: false
    plain = compile(build_state(objects), SharedPool()).snapshot.ingress.hosts
    assert plain["bare.example.com"].paths[0].actions is None  # no defaults: the fast path
    assert plain["bare.example.com"].paths[0].tls_redirect


def test_a_canary_backend_is_reached_as_its_main_path_backend() -> None:
    main = ingress(
        "shop",
        rule("shop.example.com", path("/", "web")),
        annotations={NGINX + "backend-protocol": "GRPCS"},
    )
    canary = ingress(
        "shop-canary",
        rule("shop.example.com", path("/", "next")),
        annotations={NGINX + "canary": "true", NGINX + "canary-weight": "10"},
    )
    objects = [INGRESS_CLASS, main, canary, *service("web"), *service("next")]
    snapshot = compile(build_state(objects), SharedPool()).snapshot
    actions = snapshot.ingress.hosts["shop.example.com"].paths[0].actions
    assert actions is not None
    assert actions.canary is not None
    backend = actions.canary.backend
    assert (backend.service, str(backend.protocol), backend.tls is not None) == (
        "next",
        "h2c",
        True,
    )
    assert backend.tls is not None
    assert backend.tls.server_name == "next.apps.svc"


def test_proxy_ssl_values_at_their_bounds_and_the_exact_findings_of_bad_ones() -> None:
    with_ca = _secret("backend-tls", ca_crt=trustme.CA().cert_pem.bytes())
    tls_on = {NGINX + "backend-protocol": "HTTPS", NGINX + "proxy-ssl-secret": "backend-tls"}
    long_name = "$" + "a" * 85
    backend, found = _compiled(
        {
            **tls_on,
            NGINX + "proxy-ssl-verify": "off",
            NGINX + "proxy-ssl-server-name": "on-and-on-and-on-and-on",
            NGINX + "proxy-ssl-name": long_name,
            NGINX + "proxy-ssl-verify-depth": "100",
        },
        with_ca,
    )
    assert backend.tls is not None
    assert (backend.tls.verify, backend.tls.sni, backend.tls.server_name) == (
        False,
        False,
        "web.apps.svc",
    )
    assert found == [
        f"InvalidAnnotation: {long_name[:80]!r} is not a host name (nginx variables are not "
        "expanded here); the Service's name applies",
        "InvalidAnnotation: 'on-and-on-and-on-and' is not on or off; off applies",
    ]
    backend, found = _compiled({**tls_on, NGINX + "proxy-ssl-verify-depth": "1" * 25}, with_ca)
    assert backend.tls is not None
    assert (backend.tls.verify, backend.tls.sni, backend.tls.server_name) == (
        False,
        False,
        "web.apps.svc",
    )
    assert found == ["InvalidAnnotation: '11111111111111111111' is not a depth; 1 applies"]
