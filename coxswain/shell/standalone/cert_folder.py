"""Discovery certificates kept in a folder: ``coxswain serve --issue-certs DIR``.

Without a cluster there is no Secret to keep the CA in, so the standalone server keeps it in a
folder, created on the first run and reused after (proxies started earlier keep trusting it)::

    DIR/ca.crt, DIR/ca.key                      the CA (the key readable by its owner only)
    DIR/proxies/<namespace>/<name>/tls.crt      one proxy identity's certificate (SPIFFE URI
    DIR/proxies/<namespace>/<name>/tls.key      spiffe://<trust-domain>/ns/<namespace>/sa/<name>)
    DIR/proxies/<namespace>/<name>/ca.crt       the CA again, so one folder is all a proxy needs

The layout mirrors the certificate Secrets the controller mounts into proxy pods (``tls.crt``,
``tls.key``, ``ca.crt``). A proxy certificate is issued for every identity the manifests grant
a scope (the shared pool's, each dedicated Gateway's) and re-issued only when it is missing,
unreadable, from another CA, or due for renewal (``RENEW_BEFORE`` of expiring, as the
controller renews its Secrets): ``coxswain serve`` checks at every change of the manifests and
at least every ``RENEW_CHECK_INTERVAL``. Proxies read their files again at each connection to
discovery (:mod:`.discovery.tls`), so a renewed certificate needs no restart. The server's own
certificate is kept in memory, issued at start and again before it expires
(:class:`~.discovery.tls.ServerCertificate`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from coxswain.shell.discovery.ca import CertificateAuthority, IdentityError, create_ca, renewal_due
from coxswain.shell.discovery.tls import ServerCertificate, ServerCredentials

if TYPE_CHECKING:
    import datetime
    from collections.abc import Iterable

__all__ = ["DEFAULT_TRUST_DOMAIN", "RENEW_CHECK_INTERVAL", "CertificateFolder"]

DEFAULT_TRUST_DOMAIN: Final = "coxswain.local"
RENEW_CHECK_INTERVAL: Final = 3600.0  # seconds; renewal is due a month ahead, so hourly is ample


class CertificateFolder:
    """The CA of one folder, and the proxy certificates it has issued there."""

    def __init__(self, root: Path, ca: CertificateAuthority) -> None:
        self.root = root
        self.ca = ca

    @classmethod
    def open(
        cls, root: str, *, now: datetime.datetime, trust_domain: str = DEFAULT_TRUST_DOMAIN
    ) -> CertificateFolder:
        """The folder's CA, created (with the folder) when there is none yet.

        Raises:
            OSError: the folder or its CA cannot be read or written.
            ValueError: ``ca.crt`` or ``ca.key`` is not PEM of the kind expected.
        """
        path = Path(root)
        cert, key = path / "ca.crt", path / "ca.key"
        if cert.exists() and key.exists():
            ca = CertificateAuthority(
                trust_domain=trust_domain, cert_pem=cert.read_bytes(), key_pem=key.read_bytes()
            )
        else:
            path.mkdir(parents=True, exist_ok=True)
            ca = create_ca(trust_domain=trust_domain, now=now)
            _write(key, ca.key_pem, private=True)
            _write(cert, ca.cert_pem)
        return cls(path, ca)

    def server_certificate(self, hosts: list[str]) -> ServerCertificate:
        """The server's certificate for ``hosts`` (names or IP literals), with the CA that
        client certificates must chain to; issued now and again before it expires."""

        def issue(now: datetime.datetime) -> ServerCredentials:
            issued = self.ca.issue_server(hosts=hosts, now=now)
            return ServerCredentials(
                cert_pem=issued.cert_pem, key_pem=issued.key_pem, ca_pem=self.ca.cert_pem
            )

        return ServerCertificate(issue)

    def proxy_folder(self, namespace: str, name: str) -> Path:
        """Where the certificate of ServiceAccount ``namespace/name`` is kept."""
        return self.root / "proxies" / namespace / name

    def issue_proxies(
        self, identities: Iterable[tuple[str, str]], *, now: datetime.datetime
    ) -> list[Path]:
        """Make sure each ``(namespace, name)`` has a certificate valid for more than
        ``RENEW_BEFORE``; returns the folders written now (the others are left alone).

        Raises:
            OSError: a folder cannot be written.
        """
        written = []
        for namespace, name in identities:
            folder = self.proxy_folder(namespace, name)
            if self._valid(folder, now):
                continue
            issued = self.ca.issue_proxy(namespace=namespace, name=name, now=now)
            folder.mkdir(parents=True, exist_ok=True)
            _write(folder / "tls.key", issued.key_pem, private=True)
            _write(folder / "tls.crt", issued.cert_pem)
            _write(folder / "ca.crt", self.ca.cert_pem)
            written.append(folder)
        return written

    def _valid(self, folder: Path, now: datetime.datetime) -> bool:
        try:
            cert = (folder / "tls.crt").read_bytes()
            if not (folder / "tls.key").exists():
                return False
            due = renewal_due(cert, self.ca.cert_pem)
        except (OSError, ValueError, IdentityError):
            return False
        return now < due and (folder / "ca.crt").exists()


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    """Write through a temporary name and rename, so a reader never sees half a file; keys
    are created readable by their owner only."""
    temporary = path.with_name(f".{path.name}.tmp")
    descriptor = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644
    )
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    os.replace(temporary, path)
