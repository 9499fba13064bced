"""Discovery for end-to-end tests: a proxy identity the server grants the shared pool, its
certificate files, and the command line of a proxy fed by discovery."""

from __future__ import annotations

import datetime
import sys
from typing import TYPE_CHECKING

from coxswain.compile.scope import SharedPool

from .proxy_harness import free_port

if TYPE_CHECKING:
    from pathlib import Path

    from coxswain.compile.scope import Scope
    from coxswain.shell.discovery.ca import CertificateAuthority, ProxyIdentity

NOW = datetime.datetime.now(datetime.UTC)
TIMEOUT = 20


def allow(identity: ProxyIdentity, scope: Scope) -> bool:
    return isinstance(scope, SharedPool) and (identity.namespace, identity.name) == (
        "coxswain",
        "shared",
    )


def proxy_files(tmp_path: Path, ca: CertificateAuthority, name: str) -> list[str]:
    issued = ca.issue_proxy(namespace="coxswain", name=name, now=NOW)
    files = {"cert": issued.cert_pem, "key": issued.key_pem, "ca": ca.cert_pem}
    for kind, pem in files.items():
        (tmp_path / f"{name}.{kind}.pem").write_bytes(pem)
    return [
        arg for kind in files for arg in (f"--tls-{kind}", str(tmp_path / f"{name}.{kind}.pem"))
    ]


def command(address: str, http_port: int, tls: list[str], workers: int = 1) -> list[str]:
    return [
        sys.executable, "-m", "coxswain", "proxy", "--shared", "--discovery", address,
        "--node-id", "shared-0", "--bind", "127.0.0.1", "--ingress-http-port", str(http_port),
        "--ingress-https-port", str(free_port()), "--admin-port", "0",
        "--workers", str(workers), *tls,
    ]  # fmt: skip
