"""ingress-nginx's ``backend-protocol``, ``proxy-ssl-*`` and ``service-upstream`` annotations →
how the proxy reaches an Ingress's backends (docs/migrating-from-ingress-nginx.md,
"Backends"). Pure.

Rules, ingress-nginx's (its annotation reference, "Backend Protocol" and "Backend Certificate
Authentication"):
1. ``backend-protocol``: ``HTTP`` (the default) is HTTP/1.1 in clear; ``GRPC`` is HTTP/2 with
   prior knowledge (``BackendProtocol.H2C``); ``HTTPS`` is HTTP/1.1 over TLS; ``GRPCS`` is
   HTTP/2 over TLS, negotiated with ALPN ``h2`` (RFC 9113 §3.2). Case-insensitive.
   ``AUTO_HTTP``, ``FCGI`` and other values are ``compile.ingress.access``'s.
2. Over TLS, without ``proxy-ssl-secret`` the backend's certificate is taken unchecked and no
   server name is sent, as nginx's ``proxy_ssl_verify`` and ``proxy_ssl_server_name`` default
   to off.
3. ``proxy-ssl-secret`` (``namespace/name`` or ``name``, in the Ingress's own namespace only,
   as ingress-nginx allows by default): its ``ca.crt`` is the trust for verification and its
   ``tls.crt``/``tls.key``, when present, the client certificate presented. ingress-nginx
   applies the ``proxy-ssl-*`` settings only with a Secret that has a ``ca.crt``; so does
   Coxswain, saying so. A missing or foreign Secret makes the backend invalid (503), as
   ingress-nginx denies the location.
4. With the Secret: ``proxy-ssl-verify`` (``on``/``off``, default off) verifies the chain and
   the name; ``proxy-ssl-name`` is that name (default: the Service's ``<name>.<namespace>.svc``,
   where nginx would use its upstream's name) and is sent as SNI when
   ``proxy-ssl-server-name`` is ``on`` (default off). ``proxy-ssl-verify-depth`` (default 1)
   is checked as a number; the chain is verified to the CA at any depth. A value that does not
   parse is reported and its default applies, as ingress-nginx does.
5. ``service-upstream: "true"``: the Service's cluster IP and port are the one endpoint
   (``Backend.cluster_ip``; ``compile.backends``), where ingress-nginx would balance over
   the endpoints itself; kube-proxy balances instead.
6. ``ssl-passthrough: "true"``: TLS connections for the Ingress's hosts are passed through
   to the backend of their ``/`` path (``VirtualHost.passthrough``; ``compile.ingress.rules``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from coxswain.compile.diagnostics import Diagnostic, Severity
from coxswain.compile.hostnames import ascii_lower, is_hostname
from coxswain.compile.ingress.registry import annotation_value
from coxswain.compile.model.keys import ObjectKey
from coxswain.compile.snapshot import BackendProtocol, Certificate, UpstreamTLS

if TYPE_CHECKING:
    from pyrsistent.typing import PMap

    from coxswain.compile.model.objects import Ingress, Secret
    from coxswain.compile.snapshot import Backend

__all__ = ["BackendSettings", "read_backend_settings"]

_PROTOCOLS: Final = {
    "HTTP": (BackendProtocol.HTTP1, False),
    "HTTPS": (BackendProtocol.HTTP1, True),
    "GRPC": (BackendProtocol.H2C, False),
    "GRPCS": (BackendProtocol.H2C, True),
}
MAX_VERIFY_DEPTH: Final = 100


@dataclass(frozen=True, slots=True)
class BackendSettings:
    """The protocol and TLS of one Ingress's backends, and whether they are reached through
    the Service's cluster IP; ``tls.server_name`` empty stands for each backend's own Service
    name (rule 4)."""

    protocol: BackendProtocol = BackendProtocol.HTTP1
    tls: UpstreamTLS | None = None
    cluster_ip: bool = False
    passthrough: bool = False

    def apply(self, backend: Backend) -> Backend:
        """``backend`` reached with these settings."""
        if self.cluster_ip:
            backend = dataclasses.replace(backend, cluster_ip=True)
        tls = self.tls
        if tls is None:
            if self.protocol is BackendProtocol.HTTP1:
                return backend
            return dataclasses.replace(backend, protocol=self.protocol)
        if not tls.server_name:
            tls = dataclasses.replace(tls, server_name=f"{backend.service}.{backend.namespace}.svc")
        return dataclasses.replace(
            backend,
            protocol=self.protocol,
            tls=tls,
            valid=backend.valid and tls.problem is None,
        )


def read_backend_settings(
    ingress: Ingress,
    secrets: PMap[ObjectKey, Secret],
    found: list[Diagnostic],
    read: set[ObjectKey],
) -> BackendSettings:
    """The settings of ``ingress``'s backends (rules 1 to 6). Pure."""
    note = _Notes(ingress, found)
    return dataclasses.replace(
        _protocol(ingress, secrets, note, read),
        cluster_ip=note.boolean("service-upstream"),
        passthrough=note.boolean("ssl-passthrough"),
    )


def _protocol(
    ingress: Ingress, secrets: PMap[ObjectKey, Secret], note: _Notes, read: set[ObjectKey]
) -> BackendSettings:
    named = annotation_value(ingress, "backend-protocol")
    protocol, over_tls = _PROTOCOLS.get(
        named[0].upper() if named else "HTTP", (BackendProtocol.HTTP1, False)
    )
    if not over_tls:
        return BackendSettings(protocol)
    policy = f"Ingress {ingress.meta.key.ref}"
    unchecked = UpstreamTLS(policy=policy, server_name="", verify=False, sni=False)
    secret_named = annotation_value(ingress, "proxy-ssl-secret")
    if secret_named is None:
        return BackendSettings(protocol, unchecked)
    value, key = secret_named
    own = ingress.meta.key.namespace
    namespace, _, name = value.strip().rpartition("/")
    secret_key = ObjectKey("Secret", own, name)
    secret = None
    if namespace not in ("", own):
        why = f"names a Secret outside the Ingress's namespace {own}"
    else:
        read.add(secret_key)
        secret = secrets.get(secret_key)
        why = f"names Secret {own}/{name}, which does not exist"
    if secret is None:  # ingress-nginx denies the location
        note.add(key, f"{why}; the Ingress's backends answer 503", Severity.ERROR)
        problem = f"annotation {key} {why}"
        return BackendSettings(
            protocol, UpstreamTLS(policy=policy, server_name="", problem=problem)
        )
    if secret.ca_bundle is None:
        note.add(
            key,
            f"Secret {own}/{name} has no ca.crt, so the proxy-ssl settings are not applied "
            "(as in ingress-nginx): the backend's certificate is taken unchecked",
        )
        return BackendSettings(protocol, unchecked)
    client = None
    if secret.keypair is not None:
        client = Certificate(
            chain_pem=secret.keypair.chain_pem,
            key_pem=secret.keypair.key_pem,
            secret=secret_key.ref,
        )
    note.verify_depth()
    return BackendSettings(
        protocol,
        UpstreamTLS(
            policy=policy,
            server_name=note.ssl_name(),
            ca_pem=secret.ca_bundle,
            client_certificate=client,
            verify=note.on_off("proxy-ssl-verify"),
            sni=note.on_off("proxy-ssl-server-name"),
        ),
    )


class _Notes:
    """Reads the ``proxy-ssl-*`` values of one Ingress, reporting those that do not parse."""

    def __init__(self, ingress: Ingress, found: list[Diagnostic]) -> None:
        self.ingress = ingress
        self.found = found

    def add(self, key: str, message: str, severity: Severity = Severity.WARNING) -> None:
        self.found.append(
            Diagnostic(
                key=self.ingress.meta.key,
                field=f"metadata.annotations[{key!r}]",
                severity=severity,
                reason="InvalidAnnotation",
                message=message,
            )
        )

    def boolean(self, name: str) -> bool:
        read = annotation_value(self.ingress, name)
        if read is None or read[0].lower() == "false":
            return False
        if read[0].lower() == "true":
            return True
        self.add(read[1], f"{read[0][:20]!r} is not true or false; false applies")
        return False

    def on_off(self, name: str) -> bool:
        read = annotation_value(self.ingress, name)
        if read is None or read[0] == "off":
            return False
        if read[0] == "on":
            return True
        self.add(read[1], f"{read[0][:20]!r} is not on or off; off applies")
        return False

    def ssl_name(self) -> str:
        read = annotation_value(self.ingress, "proxy-ssl-name")
        if read is None:
            return ""
        name = ascii_lower(read[0].strip())
        if is_hostname(name):
            return name
        self.add(
            read[1],
            f"{read[0][:80]!r} is not a host name (nginx variables are not expanded here); "
            "the Service's name applies",
        )
        return ""

    def verify_depth(self) -> None:
        read = annotation_value(self.ingress, "proxy-ssl-verify-depth")
        if read is None:
            return
        value = read[0].strip()
        if not (value.isdigit() and int(value) <= MAX_VERIFY_DEPTH):
            self.add(read[1], f"{value[:20]!r} is not a depth; 1 applies")
