"""``compile.ingress.access.read_access`` at its edges (docs/migrating-from-ingress-nginx.md,
"Access"): the deny list read from its own annotation, the bound on networks, each reason an
``auth-type`` or ``auth-secret-type`` fails closed with, and the realm as written or empty."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from coxswain.compile.ingress.access import MAX_NETWORKS, Access, read_access
from tests.unit.ingress_world import NGINX, annotated, htpasswd_secret

if TYPE_CHECKING:
    from coxswain.compile.diagnostics import Diagnostic
    from coxswain.compile.model.keys import ObjectKey

USERS = "ana:$apr1$salt$hash\n"


def access(annotations: dict[str, str]) -> Access:
    only, state = annotated(annotations, htpasswd_secret(USERS))
    found: list[Diagnostic] = []
    read: set[ObjectKey] = set()
    return read_access(only, state.secrets, found, read)


def test_the_deny_list_is_read_from_its_own_annotation():
    read = access({"denylist-source-range": "10.1.2.3/8, 192.0.2.7"})
    assert (list(read.deny_sources), list(read.allow_sources), read.denied) == (
        ["10.0.0.0/8", "192.0.2.7/32"],
        [],
        None,
    )


def test_networks_to_the_bound_are_kept_and_one_more_fails_closed():
    networks = [f"10.0.{n // 256}.{n % 256}" for n in range(MAX_NETWORKS + 1)]
    read = access({"whitelist-source-range": ", ".join(networks[:MAX_NETWORKS])})
    assert (len(read.allow_sources), read.denied) == (MAX_NETWORKS, None)
    read = access({"whitelist-source-range": ", ".join(networks)})
    assert list(read.allow_sources) == []
    assert read.denied == (
        f"annotation {NGINX}whitelist-source-range names more than {MAX_NETWORKS} networks"
    )


def test_a_bad_network_is_quoted_to_sixty_characters():
    bad = "n" * 70
    assert access({"denylist-source-range": bad}).denied == (
        f"annotation {NGINX}denylist-source-range names {bad[:60]!r}, which is no network or "
        "address"
    )


def test_an_unknown_backend_protocol_is_quoted_to_twenty_characters():
    protocol = "a-protocol-nobody-speaks"
    assert access({"backend-protocol": protocol}).denied == (
        f"annotation {NGINX}backend-protocol {protocol[:20]!r} is not a backend protocol"
    )


@pytest.mark.parametrize(
    ("kind", "why"),
    [("digest", "digest is not implemented by Coxswain"), ("bearer", "is not basic")],
)
def test_an_auth_type_other_than_basic_fails_closed_saying_why(kind, why):
    read = access({"auth-type": kind, "auth-secret": "users"})
    assert read.denied == f"annotation {NGINX}auth-type {why}"


def test_an_auth_map_fails_closed_and_an_auth_file_is_read():
    read = access({"auth-type": "basic", "auth-secret": "users", "auth-secret-type": "auth-map"})
    assert read.denied == (
        f"annotation {NGINX}auth-secret-type is not auth-file, the only type Coxswain reads yet"
    )
    read = access({"auth-type": "basic", "auth-secret": "users", "auth-secret-type": "auth-file"})
    assert (read.denied, list(read.auth_users)) == (None, [("ana", "$apr1$salt$hash")])


def test_the_realm_is_empty_when_unset_and_cut_to_256_characters():
    basic = {"auth-type": "basic", "auth-secret": "users"}
    assert access(basic).auth_realm == ""
    assert access({**basic, "auth-realm": "r" * 300}).auth_realm == "r" * 256
