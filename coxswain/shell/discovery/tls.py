"""The TLS material of discovery, and how it stays valid while the processes run.

Discovery is mutual TLS (docs/contracts.md): the server presents a certificate of the cluster's
CA, each proxy a client certificate naming its identity. Certificates are issued for a year
(:data:`~.ca.DEFAULT_VALIDITY`) and replaced ``RENEW_BEFORE`` (30 days) before they expire, by
whoever issued them (:mod:`.cluster_ca` for proxies in a cluster, :mod:`.cert_folder` for
``coxswain serve``). A process that read its certificate once at start would keep presenting
it after its replacement was issued, until it expires and every new connection fails; so:

- **Server**: :class:`ServerCertificate` issues the server's certificate again once it is due,
  asked by gRPC at every new connection (``grpc.dynamic_ssl_server_credentials``). Streams
  already open keep their connection: TLS checks certificates at the handshake only.
- **Client**: :class:`CredentialFiles` reads the mounted certificate files again at every
  connection attempt, so a renewed Secret (which the kubelet swaps into the mounted folder) is
  used from the next reconnect on, without restarting the proxy. An unreadable file keeps the
  last good reading and is logged.
"""

from __future__ import annotations

import datetime
import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from coxswain.shell.discovery.ca import (
    IdentityError,
    ProxyIdentity,
    identity_from_certificate,
    renewal_due,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = [
    "ClientCredentials",
    "CredentialFiles",
    "ServerCertificate",
    "ServerCredentials",
    "channel_credentials",
    "peer_identity",
    "server_credentials",
]

log = logging.getLogger("coxswain.discovery")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerCredentials:
    """The server's certificate and key, and the CA that client certificates must chain to."""

    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientCredentials:
    """The proxy's certificate and key, and the CA the server's certificate must chain to."""

    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class ServerCertificate:
    """The discovery server's certificate, issued again once it is due for renewal.

    Args:
        issue: issues credentials valid from the given time (the CA's ``issue_server``).
        clock: the current time (tests move it).
    """

    def __init__(
        self,
        issue: Callable[[datetime.datetime], ServerCredentials],
        clock: Callable[[], datetime.datetime] = _utc_now,
    ) -> None:
        self._issue = issue
        self._clock = clock
        self._lock = threading.Lock()  # gRPC may ask from several threads at once
        self.current = issue(clock())
        self._due = renewal_due(self.current.cert_pem, self.current.ca_pem)

    def renewed(self) -> ServerCredentials | None:
        """New credentials when the current ones are due, else None (keep them)."""
        with self._lock:
            now = self._clock()
            if now < self._due:
                return None
            try:
                fresh = self._issue(now)
            except Exception:  # a failed issue must not fail the handshake: the old one holds
                log.exception("discovery: renewing the server certificate failed")
                return None
            self.current, self._due = fresh, renewal_due(fresh.cert_pem, fresh.ca_pem)
        log.info("discovery: server certificate renewed, next renewal after %s", self._due)
        return fresh


def server_credentials(source: ServerCredentials | ServerCertificate) -> grpc.ServerCredentials:
    """gRPC server credentials requiring a client certificate; renewed as they fall due when
    ``source`` is a :class:`ServerCertificate`."""
    if isinstance(source, ServerCredentials):
        return grpc.ssl_server_credentials(
            [(source.key_pem, source.cert_pem)],
            root_certificates=source.ca_pem,
            require_client_auth=True,
        )

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        fresh = source.renewed()
        return None if fresh is None else _configuration(fresh)

    return grpc.dynamic_ssl_server_credentials(
        _configuration(source.current), fetch, require_client_authentication=True
    )


def _configuration(credentials: ServerCredentials) -> grpc.ServerCertificateConfiguration:
    return grpc.ssl_server_certificate_configuration(
        [(credentials.key_pem, credentials.cert_pem)], root_certificates=credentials.ca_pem
    )


class CredentialFiles:
    """A proxy's client certificate, key and CA as mounted files, read at each connection.

    Raises:
        OSError: at construction, when a file cannot be read (the command line says so and
            exits; later failures keep the last good reading).
    """

    def __init__(self, cert: Path, key: Path, ca: Path) -> None:
        self.paths = (cert, key, ca)
        self._last = self._read()

    def _read(self) -> ClientCredentials:
        cert, key, ca = (path.read_bytes() for path in self.paths)
        return ClientCredentials(cert_pem=cert, key_pem=key, ca_pem=ca)

    def read(self) -> ClientCredentials:
        """The files' current contents, or the last good reading when one cannot be read."""
        try:
            self._last = self._read()
        except OSError as err:
            log.warning("discovery: keeping the credentials read before: %s", err)
        return self._last


def channel_credentials(source: ClientCredentials | CredentialFiles) -> grpc.ChannelCredentials:
    """gRPC channel credentials for one connection attempt (files are read again)."""
    credentials = source.read() if isinstance(source, CredentialFiles) else source
    return grpc.ssl_channel_credentials(
        root_certificates=credentials.ca_pem,
        private_key=credentials.key_pem,
        certificate_chain=credentials.cert_pem,
    )


def peer_identity(context: Any) -> ProxyIdentity | None:
    """The identity of a server call's verified client certificate; None without one."""
    pems = context.auth_context().get("x509_pem_cert") or []
    if not pems:
        return None
    try:
        return identity_from_certificate(pems[0])
    except (IdentityError, ValueError):
        return None
