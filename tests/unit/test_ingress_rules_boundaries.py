"""compile.ingress.rules: the order of a host's paths, canaries reached as their main path,
and the exact warning when ``ssl-passthrough`` cannot apply."""

from __future__ import annotations

from typing import Any

from coxswain.compile import SharedPool, build_state, compile
from tests.unit.ingress_world import INGRESS_CLASS, ingress, path, rule, service

NGINX = "nginx.ingress.kubernetes.io/"


def _compiled(*objects: dict[str, Any]) -> Any:
    return compile(build_state([INGRESS_CLASS, *objects, *service("web")]), SharedPool())


def test_exact_paths_come_first_then_regex_paths_then_prefixes_longer_first() -> None:
    plain = ingress(
        "plain",
        rule(
            "a.example",
            path("/a", "web"),
            path("/longer", "web"),
            path("/e", "web", "Exact"),
        ),
    )
    regex = ingress(
        "regex", rule("a.example", path("/r", "web")), annotations={NGINX + "use-regex": "true"}
    )
    paths = _compiled(plain, regex).snapshot.ingress.hosts["a.example"].paths
    assert [(str(p.match), p.path) for p in paths] == [
        ("Exact", "/e"),
        ("Regex", "/r"),
        ("Prefix", "/longer"),
        ("Prefix", "/a"),
    ]


def test_a_canary_after_a_path_without_one_is_reached_as_its_main_path() -> None:
    main = ingress(
        "main",
        rule("a.example", path("/a", "web"), path("/b", "web")),
        annotations={NGINX + "backend-protocol": "GRPC"},
    )
    canary = ingress(
        "canary",
        rule("a.example", path("/b", "web")),
        annotations={NGINX + "canary": "true", NGINX + "canary-weight": "10"},
    )
    paths = _compiled(main, canary).snapshot.ingress.hosts["a.example"].paths
    [b] = [p for p in paths if p.path == "/b"]
    assert b.actions is not None
    assert b.actions.canary is not None
    assert str(b.actions.canary.backend.protocol) == "h2c"


def test_passthrough_warnings_name_the_catch_all_host_and_the_ingress_that_holds_a_host() -> None:
    on = {NGINX + "ssl-passthrough": "true"}
    first = ingress("first", rule("a.example", path("/", "web")), annotations=on)
    second = ingress(
        "second", rule("a.example", path("/", "web")), rule(None, path("/", "web")), annotations=on
    )
    first["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"  # older: it holds the host
    second["metadata"]["creationTimestamp"] = "2030-01-01T00:00:00Z"
    found = [
        d.message
        for d in _compiled(first, second).diagnostics
        if d.key is not None and d.reason == "PassthroughNotApplied"
    ]
    assert found == [
        "host 'a.example' is passed through to Ingress apps/first already, which takes "
        "precedence; its TLS connections are terminated as usual",
        "the catch-all host has no server name to pass through by; its TLS connections are "
        "terminated as usual",
    ]
