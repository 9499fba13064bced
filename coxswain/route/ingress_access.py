"""The per-request checks of an Ingress path's access annotations (``compile.ingress.access``;
docs/migrating-from-ingress-nginx.md, "Access"). Pure.

They depend on the client's address, its credentials and its body size, so they run on every
request after the (cached) routing decision, in nginx's order:
1. ``denylist-source-range``: a client in one of its networks gets 403;
2. ``whitelist-source-range``: a client in none of its networks gets 403;
3. basic authentication: without the credentials of one of the users (``Authorization:
   Basic``, RFC 7617), 401 with ``WWW-Authenticate: Basic realm="<auth-realm>"``;
4. ``proxy-body-size``: a declared ``Content-Length`` over the limit gets 413 (RFC 9110
   §15.5.14) before anything is forwarded.
The client is the connection's peer, as nginx's ``$remote_addr`` without the realip module.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

    from coxswain.compile.snapshot import IngressActions

__all__ = ["AccessCheck", "Refusal", "client_address"]

_MAX_CREDENTIALS: Final = 4096


@dataclass(frozen=True, slots=True)
class Refusal:
    """The proxy's own answer to a request the checks refuse."""

    status: int
    reason: str
    fields: tuple[tuple[bytes, bytes], ...] = ()


class AccessCheck:
    """The checks of one path's actions, parsed once per snapshot."""

    __slots__ = ("_allow", "_challenge", "_deny", "_max_body", "_realm", "_users")

    def __init__(self, actions: IngressActions) -> None:
        self._deny = [ipaddress.ip_network(n) for n in actions.deny_sources]
        self._allow = [ipaddress.ip_network(n) for n in actions.allow_sources]
        self._realm = actions.auth_realm
        self._users: dict[str, str] = {}
        for user, hashed in actions.auth_users:
            self._users.setdefault(user, hashed)  # the first line of a user counts, as nginx's
        realm = (actions.auth_realm or "").encode("latin-1", "replace")
        self._challenge = ((b"www-authenticate", b'Basic realm="' + realm + b'"'),)
        self._max_body = actions.max_body

    def refusal(
        self,
        client: str | None,
        authorization: str | None,
        content_length: int | None,
        verify: Callable[[bytes, str], bool],
    ) -> Refusal | None:
        """Why this request is refused (rules 1 to 4), or None to forward it."""
        if self._deny or self._allow:
            address = client_address(client)
            if address is None or any(address in n for n in self._deny):
                return Refusal(403, f"the client {client} is refused by denylist-source-range")
            if self._allow and not any(address in n for n in self._allow):
                return Refusal(403, f"the client {client} is not in whitelist-source-range")
        if self._realm is not None and not self._authorized(authorization, verify):
            return Refusal(401, "basic authentication is required", self._challenge)
        if self._max_body and content_length is not None and content_length > self._max_body:
            return Refusal(
                413, f"the body of {content_length} bytes is over proxy-body-size {self._max_body}"
            )
        return None

    def _authorized(self, authorization: str | None, verify: Callable[[bytes, str], bool]) -> bool:
        if authorization is None or len(authorization) > _MAX_CREDENTIALS:
            return False
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            decoded = base64.b64decode(token.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        user, colon, password = decoded.partition(b":")
        hashed = self._users.get(user.decode("utf-8", "replace"))
        return bool(colon) and hashed is not None and verify(password, hashed)


def client_address(client: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The peer's address, an IPv4-mapped IPv6 one as IPv4; None when it is none."""
    if client is None:
        return None
    try:
        address = ipaddress.ip_address(client.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address
