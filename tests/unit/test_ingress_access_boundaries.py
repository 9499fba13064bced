"""The access checks of an Ingress path at their edges (``route.ingress_access``;
ingress-nginx's source ranges, basic authentication per RFC 7617, proxy-body-size): the client
address as the socket gives it, the credentials' length and encoding, the realm's bytes."""

from __future__ import annotations

import base64

import pytest
from pyrsistent import pvector

from coxswain.compile.snapshot import IngressActions
from coxswain.route.ingress_access import AccessCheck, Refusal, client_address

USERS = pvector([("user", "pa:ss")])


def verify(password: bytes, hashed: str) -> bool:
    return password == hashed.encode()


def basic(credentials: bytes) -> str:
    return "Basic " + base64.b64encode(credentials).decode()


def authorized(authorization: str | None, realm: str = "staff") -> bool:
    check = AccessCheck(IngressActions(auth_realm=realm, auth_users=USERS))
    return check.refusal(None, authorization, None, verify) is None


@pytest.mark.parametrize(
    ("client", "address"),
    [
        ("10.0.0.1", "10.0.0.1"),
        ("10.0.0.1%eth0", "10.0.0.1"),
        ("fe80::1%eth0", "fe80::1"),
        ("fe80::1%a%b", "fe80::1"),
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("not an address", None),
        (None, None),
    ],
)
def test_the_client_address_drops_its_zone_and_unmaps_ipv4(
    client: str | None, address: str | None
) -> None:
    found = client_address(client)
    assert (None if found is None else str(found)) == address
    allow = AccessCheck(IngressActions(allow_sources=pvector(["10.0.0.0/8", "fe80::/64"])))
    refused = allow.refusal(client, None, None, verify)
    assert (refused is None) is (address is not None)


def test_a_password_may_hold_colons_and_the_scheme_any_case_and_spacing() -> None:
    assert authorized(basic(b"user:pa:ss"))
    assert authorized("bAsIc  " + base64.b64encode(b"user:pa:ss").decode() + " ")
    assert not authorized(basic(b"user:pa"))
    assert not authorized(basic(b"userpa:ss"))
    assert not authorized(basic(b"user"))
    assert not authorized("Bearer " + base64.b64encode(b"user:pa:ss").decode())


def test_credentials_that_are_not_strict_base64_are_refused() -> None:
    token = base64.b64encode(b"user:pa:ss").decode()
    assert not authorized(f"Basic {token}!")
    assert not authorized(f"Basic {token[:-1]}")


def test_a_user_name_that_is_not_utf8_is_no_user() -> None:
    assert not authorized(basic(b"\xff\xfe:pa:ss"))


@pytest.mark.parametrize(("length", "admitted"), [(4096, True), (4097, False)])
def test_credentials_are_read_up_to_4096_characters(length: int, admitted: bool) -> None:
    password = b"p" * (3066 - len(b"user:"))
    check = AccessCheck(
        IngressActions(auth_realm="r", auth_users=pvector([("user", password.decode())]))
    )
    field = basic(b"user:" + password)
    assert len(field) == 4094
    field += " " * (length - len(field))  # spaces stripped after the length is counted
    assert (check.refusal(None, field, None, verify) is None) is admitted


@pytest.mark.parametrize(
    ("realm", "challenge"),
    [("staff", b'Basic realm="staff"'), ("", b'Basic realm=""'), ("é€", b'Basic realm="\xe9?"')],
)
def test_the_challenge_names_the_realm_in_latin1(realm: str, challenge: bytes) -> None:
    check = AccessCheck(IngressActions(auth_realm=realm, auth_users=USERS))
    assert check.refusal(None, None, None, verify) == Refusal(
        401, "basic authentication is required", ((b"www-authenticate", challenge),)
    )
