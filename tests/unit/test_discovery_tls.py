"""Discovery's TLS material stays valid while processes run (shell.discovery.tls): the server's
certificate is issued again once due, a proxy's certificate files are read at each connection."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

import pytest

from coxswain.shell.discovery.ca import DEFAULT_VALIDITY, RENEW_BEFORE, create_ca, renewal_due
from coxswain.shell.discovery.tls import CredentialFiles, ServerCertificate, ServerCredentials

if TYPE_CHECKING:
    from pathlib import Path

NOW = datetime.datetime.now(datetime.UTC)
CA = create_ca(trust_domain="coxswain.test", now=NOW)


def _issue(now: datetime.datetime) -> ServerCredentials:
    issued = CA.issue_server(hosts=["127.0.0.1"], now=now)
    return ServerCredentials(cert_pem=issued.cert_pem, key_pem=issued.key_pem, ca_pem=CA.cert_pem)


def test_renewal_falls_due_a_month_before_expiry() -> None:
    cert = CA.issue_server(hosts=["127.0.0.1"], now=NOW).cert_pem
    due = renewal_due(cert, CA.cert_pem)
    assert abs(due - (NOW + DEFAULT_VALIDITY - RENEW_BEFORE)) < datetime.timedelta(seconds=1)


def test_the_server_certificate_is_issued_again_only_once_due() -> None:
    clock = [NOW]
    certificate = ServerCertificate(_issue, clock=lambda: clock[0])
    first = certificate.current
    due = renewal_due(first.cert_pem, CA.cert_pem)
    clock[0] = due - datetime.timedelta(seconds=1)
    assert certificate.renewed() is None
    assert certificate.current is first
    clock[0] = due
    fresh = certificate.renewed()
    assert fresh is not None
    assert fresh is certificate.current
    assert fresh.cert_pem != first.cert_pem
    # issued at the new time, so due a year later
    assert renewal_due(fresh.cert_pem, CA.cert_pem) > due
    assert certificate.renewed() is None  # and not again until then


def test_a_failed_renewal_keeps_the_current_certificate() -> None:
    clock = [NOW]
    calls: list[datetime.datetime] = []

    def issue(now: datetime.datetime) -> ServerCredentials:
        calls.append(now)
        if len(calls) > 1:
            raise RuntimeError("the CA is unavailable")
        return _issue(now)

    certificate = ServerCertificate(issue, clock=lambda: clock[0])
    first = certificate.current
    clock[0] = NOW + DEFAULT_VALIDITY
    assert certificate.renewed() is None
    assert certificate.current is first
    assert len(calls) == 2  # and it is tried again at the next connection
    assert certificate.renewed() is None
    assert len(calls) == 3


def test_credential_files_are_read_again_and_the_last_good_reading_kept(tmp_path: Path) -> None:
    cert, key, ca = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
    for path, text in ((cert, b"cert 1"), (key, b"key 1"), (ca, b"ca")):
        path.write_bytes(text)
    files = CredentialFiles(cert, key, ca)
    assert files.read().cert_pem == b"cert 1"
    cert.write_bytes(b"cert 2")
    key.write_bytes(b"key 2")
    assert (files.read().cert_pem, files.read().key_pem) == (b"cert 2", b"key 2")
    key.unlink()  # mid-rotation, or gone: the last good pair stays, never a mixed one
    cert.write_bytes(b"cert 3")
    read = files.read()
    assert (read.cert_pem, read.key_pem) == (b"cert 2", b"key 2")


def test_credential_files_that_cannot_be_read_at_start_are_an_error(tmp_path: Path) -> None:
    with pytest.raises(OSError, match=r"tls\.crt"):
        CredentialFiles(tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt")
