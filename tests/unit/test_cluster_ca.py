"""The controller's proxy certificate Secrets (shell.control.cluster_ca.ProxyCertificates): issued
when missing, foreign or due for renewal, and each certificate checked once, not at every round."""

from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING, Any

import trio

from coxswain.shell.control import cluster_ca
from coxswain.shell.control.cluster_ca import ProxyCertificates, secret_name
from coxswain.shell.discovery.ca import DEFAULT_VALIDITY, RENEW_BEFORE, create_ca

if TYPE_CHECKING:
    import pytest

NOW = datetime.datetime(2026, 12, 3, 12, 0, tzinfo=datetime.UTC)
EDGE = ("app", "edge")
KEY = ("app", secret_name("edge"))


class _Provisioner:
    """Records what would be applied."""

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []

    async def apply(self, kind: str, namespace: str, name: str, manifest: str) -> None:
        assert (kind, namespace, name) == ("Secret", *KEY)
        self.applied.append(json.loads(manifest))


def test_certificates_are_issued_when_missing_foreign_or_due_and_checked_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ca = create_ca(trust_domain="cluster.local", now=NOW)
    provisioner = _Provisioner()
    certificates = ProxyCertificates(provisioner, ca)  # type: ignore[arg-type]
    checks: list[str] = []
    real = cluster_ca.renewal_due

    def counted(cert_pem: bytes, ca_pem: bytes) -> datetime.datetime:
        checks.append("check")
        return real(cert_pem, ca_pem)

    monkeypatch.setattr(cluster_ca, "renewal_due", counted)

    def issue(secrets: dict[tuple[str, str], dict[str, Any]], now: datetime.datetime) -> int:
        before = len(provisioner.applied)
        trio.run(lambda: certificates.issue([EDGE], secrets, now=now))
        return len(provisioner.applied) - before

    assert issue({}, NOW) == 1  # missing
    secret = provisioner.applied[-1]
    for minutes in range(5):  # rounds after: nothing to do, and the certificate checked once
        assert issue({KEY: secret}, NOW + datetime.timedelta(minutes=minutes)) == 0
    assert checks == ["check"]
    due = NOW + DEFAULT_VALIDITY - RENEW_BEFORE
    assert issue({KEY: secret}, due - datetime.timedelta(hours=1)) == 0
    assert issue({KEY: secret}, due + datetime.timedelta(hours=1)) == 1  # due for renewal
    elsewhere = _Provisioner()
    other_ca = create_ca(trust_domain="cluster.local", now=NOW)
    foreign = ProxyCertificates(elsewhere, other_ca)  # type: ignore[arg-type]
    trio.run(lambda: foreign.issue([EDGE], {}, now=NOW))
    assert issue({KEY: elsewhere.applied[-1]}, NOW) == 1  # another CA's: replaced
