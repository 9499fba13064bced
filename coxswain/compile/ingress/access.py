"""ingress-nginx's access annotations and body limit, read into ``IngressActions`` fields
(docs/migrating-from-ingress-nginx.md, "Access"; the proxy's side: ``route.ingress_access``).

Rules:
1. ``whitelist-source-range`` (or ``allowlist-source-range``) and ``denylist-source-range``:
   comma-separated networks or addresses; requests from elsewhere (or from there) get 403.
2. ``auth-type: basic`` with ``auth-secret`` (``name`` or ``namespace/name`` in the Ingress's
   own namespace) whose ``auth`` key is an htpasswd file, and ``auth-realm``: a request
   without one of its users' credentials gets 401. Hashes: bcrypt (``$2a$``, ``$2b$``,
   ``$2y$``), Apache MD5 (``$apr1$``), MD5-crypt (``$1$``) and SHA-1 (``{SHA}``), the formats
   ``htpasswd`` writes; a user with another (DES crypt, SHA-crypt, plain text) is left out
   and reported.
3. Fail closed: a security annotation Coxswain cannot honour — a value that does not parse,
   a missing or foreign Secret, ``auth-type: digest``, ``auth-secret-type: auth-map``, an
   ``auth-url`` that does not parse (``compile.ingress.external_auth``), or an
   ``auth-tls-secret`` without a usable ``ca.crt`` (``compile.ingress.client_tls``) — makes
   every path of the Ingress answer 503 (``denied``), as ingress-nginx denies a location
   whose authentication annotations fail rather than serve it open. The diagnostic says
   which.
4. ``backend-protocol``: ``HTTP`` (the default) and ``GRPC`` (HTTP/2 with prior knowledge,
   ``compile.ingress.rules``) are served; ``HTTPS``, ``GRPCS``, ``AUTO_HTTP`` and ``FCGI`` are
   not implemented yet and fail closed as in rule 3, rather than send a backend that expects
   TLS its traffic in clear; another value is refused the same way.
5. ``proxy-body-size``: nginx's size syntax (a number of bytes, or with ``k``, ``m`` or ``g``);
   ``0`` lifts the limit. A bad value is reported and dropped.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from pyrsistent import pvector

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.ingress.client_tls import read_client_tls
from coxswain.compile.ingress.external_auth import read_external_auth
from coxswain.compile.ingress.registry import annotation_value
from coxswain.compile.model.keys import ObjectKey

if TYPE_CHECKING:
    from pyrsistent.typing import PMap, PVector

    from coxswain.compile.model.objects import Ingress, Secret
    from coxswain.compile.snapshot import ClientTLS, ExternalAuth

__all__ = ["Access", "read_access"]

MAX_USERS: Final = 1000
MAX_NETWORKS: Final = 256
_SIZE: Final = re.compile(r"([0-9]{1,15})([kKmMgG]?)")
_UNITS: Final = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_HASHES: Final = ("$2a$", "$2b$", "$2y$", "$apr1$", "$1$", "{SHA}")
_REALM_UNSAFE: Final = re.compile(r'["\\\x00-\x1f\x7f]')


@dataclass(slots=True, kw_only=True)
class Access:
    """The access fields of one Ingress's actions."""

    denied: str | None = None
    allow_sources: PVector[str] = field(default_factory=pvector)
    deny_sources: PVector[str] = field(default_factory=pvector)
    auth_realm: str | None = None
    auth_users: PVector[tuple[str, str]] = field(default_factory=pvector)
    max_body: int = 0
    external_auth: ExternalAuth | None = None
    client_tls: ClientTLS | None = None


def read_access(
    ingress: Ingress,
    secrets: PMap[ObjectKey, Secret],
    found: list[Diagnostic],
    read: set[ObjectKey],
) -> Access:
    """The access fields of ``ingress`` (rules 1 to 5). Pure."""
    access = Access(max_body=_body_size(ingress, found))
    problems: list[tuple[str, str]] = []  # (annotation key, why): rule 3
    not_yet: list[str] = []
    protocol = annotation_value(ingress, "backend-protocol")
    if protocol is not None and protocol[0].upper() not in ("HTTP", "GRPC"):
        if protocol[0].upper() in ("HTTPS", "GRPCS", "AUTO_HTTP", "FCGI"):
            not_yet.append(protocol[1])
        else:
            problems.append((protocol[1], f"{protocol[0][:20]!r} is not a backend protocol"))
    allow = annotation_value(ingress, "whitelist-source-range") or annotation_value(
        ingress, "allowlist-source-range"
    )
    access.allow_sources = _networks(allow, problems)
    access.deny_sources = _networks(annotation_value(ingress, "denylist-source-range"), problems)
    _basic_auth(ingress, secrets, access, problems, found, read)
    access.external_auth = read_external_auth(ingress, problems, found)
    access.client_tls = read_client_tls(ingress, secrets, problems, found, read)
    for key, why in problems:  # the registry reports those not implemented yet
        found.append(
            _finding(
                ingress,
                key,
                Severity.ERROR,
                f"{why}; the Ingress's paths answer 503 rather than serve without it",
            )
        )
    problems.extend((key, "is not implemented by Coxswain yet") for key in not_yet)
    if problems:  # the registry has reported the annotations not implemented yet
        key, why = problems[0]
        access.denied = f"annotation {key} {why}"
    return access


def _networks(read: tuple[str, str] | None, problems: list[tuple[str, str]]) -> PVector[str]:
    if read is None:
        return pvector()
    value, key = read
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if len(parts) > MAX_NETWORKS:
        problems.append((key, f"names more than {MAX_NETWORKS} networks"))
        return pvector()
    networks = []
    for part in parts:
        try:
            networks.append(str(ipaddress.ip_network(part, strict=False)))
        except ValueError:
            problems.append((key, f"names {part[:60]!r}, which is no network or address"))
            return pvector()
    if not networks:
        problems.append((key, "names no network"))
    return pvector(networks)


def _basic_auth(
    ingress: Ingress,
    secrets: PMap[ObjectKey, Secret],
    access: Access,
    problems: list[tuple[str, str]],
    found: list[Diagnostic],
    read: set[ObjectKey],
) -> None:
    kind = annotation_value(ingress, "auth-type")
    if kind is None:
        return
    value, key = kind
    if value != "basic":
        why = "digest is not implemented by Coxswain" if value == "digest" else "is not basic"
        problems.append((key, why))
        return
    secret_type = annotation_value(ingress, "auth-secret-type")
    if secret_type is not None and secret_type[0] != "auth-file":
        problems.append((secret_type[1], "is not auth-file, the only type Coxswain reads yet"))
        return
    named = annotation_value(ingress, "auth-secret")
    if named is None:
        problems.append((key, "needs auth-secret"))
        return
    namespace, _, name = named[0].rpartition("/")
    own = ingress.meta.key.namespace
    if namespace not in ("", own):
        problems.append((named[1], f"names a Secret outside the Ingress's namespace {own}"))
        return
    secret_key = ObjectKey("Secret", own, name)
    read.add(secret_key)
    secret = secrets.get(secret_key)
    if secret is None or secret.htpasswd is None:
        problems.append((named[1], f"names Secret {own}/{name}, which has no auth key"))
        return
    realm = annotation_value(ingress, "auth-realm")
    access.auth_realm = "" if realm is None else _REALM_UNSAFE.sub("", realm[0])[:256]
    access.auth_users = pvector(_users(ingress, named[1], secret.htpasswd, found))


def _users(ingress: Ingress, key: str, text: str, found: list[Diagnostic]) -> list[tuple[str, str]]:
    """The htpasswd entries with a hash we verify (rule 2); the others reported."""
    users: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines()[: MAX_USERS * 2], start=1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        user, colon, hashed = entry.partition(":")
        if colon and hashed.startswith(_HASHES) and len(entry) <= 512:
            users.append((user, hashed))
            continue
        found.append(
            _finding(
                ingress,
                key,
                Severity.WARNING,
                f"line {number} of the Secret's auth key is not user:hash with a bcrypt, "
                "$apr1$, $1$ or {SHA} hash; that user cannot log in",
            )
        )
    return users[:MAX_USERS]


def _body_size(ingress: Ingress, found: list[Diagnostic]) -> int:
    read = annotation_value(ingress, "proxy-body-size")
    if read is None:
        return 0
    value, key = read
    matched = _SIZE.fullmatch(value.strip())
    if matched is None:
        found.append(
            _finding(
                ingress,
                key,
                Severity.WARNING,
                f"{value[:40]!r} is not a size (bytes, or a number with k, m or g); "
                "the annotation is not applied",
            )
        )
        return 0
    return int(matched.group(1)) * _UNITS[matched.group(2).lower()]


def _finding(ingress: Ingress, key: str, severity: Severity, message: str) -> Diagnostic:
    return Diagnostic(
        key=ingress.meta.key,
        field=f"metadata.annotations[{key!r}]",
        severity=severity,
        reason="InvalidAnnotation",
        message=message,
    )
