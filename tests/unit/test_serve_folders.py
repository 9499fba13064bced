"""The folders of ``coxswain serve``: manifest fingerprints and the certificate folder."""

from __future__ import annotations

import datetime
import os
import stat
from types import SimpleNamespace
from typing import TYPE_CHECKING

import trio
import trio.testing

from coxswain.shell import serve
from coxswain.shell.discovery.ca import (
    DEFAULT_VALIDITY,
    RENEW_BEFORE,
    identity_from_certificate,
    verify_issued_by,
)
from coxswain.shell.standalone.cert_folder import RENEW_CHECK_INTERVAL, CertificateFolder
from coxswain.shell.standalone.manifest_folder import fingerprint

if TYPE_CHECKING:
    from pathlib import Path

NOW = datetime.datetime.now(datetime.UTC)


def test_fingerprint_sees_new_edited_and_removed_manifests_and_ignores_other_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.yaml").write_text("kind: A\n")
    (tmp_path / "notes.txt").write_text("ignored")
    first = fingerprint([str(tmp_path)])
    assert [entry[0] for entry in first] == [str(tmp_path / "a.yaml")]
    (tmp_path / "notes.txt").write_text("still ignored")
    assert fingerprint([str(tmp_path)]) == first
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yml").write_text("kind: B\n")
    second = fingerprint([str(tmp_path)])
    assert len(second) == 2
    (tmp_path / "a.yaml").write_text("kind: A\nmore: 1\n")
    assert fingerprint([str(tmp_path)]) != second
    os.remove(tmp_path / "sub" / "b.yml")
    assert len(fingerprint([str(tmp_path)])) == 1
    assert fingerprint([str(tmp_path / "a.yaml")])[0][0] == str(tmp_path / "a.yaml")


def test_certificate_folder_keeps_its_ca_and_issues_each_identity_once(tmp_path: Path) -> None:
    root = tmp_path / "certs"
    folder = CertificateFolder.open(str(root), now=NOW)
    assert stat.S_IMODE(os.stat(root / "ca.key").st_mode) == 0o600
    written = folder.issue_proxies(
        [("coxswain-system", "coxswain-proxy"), ("app", "edge")], now=NOW
    )
    assert written == [
        root / "proxies" / "coxswain-system" / "coxswain-proxy",
        root / "proxies" / "app" / "edge",
    ]
    cert = (root / "proxies" / "app" / "edge" / "tls.crt").read_bytes()
    verify_issued_by(cert, (root / "ca.crt").read_bytes(), now=NOW)
    assert identity_from_certificate(cert).uri == "spiffe://coxswain.local/ns/app/sa/edge"
    assert stat.S_IMODE(os.stat(root / "proxies" / "app" / "edge" / "tls.key").st_mode) == 0o600

    again = CertificateFolder.open(str(root), now=NOW)  # a restart: same CA, nothing reissued
    assert again.ca.cert_pem == folder.ca.cert_pem
    assert again.issue_proxies([("app", "edge")], now=NOW) == []
    # a certificate of another CA (the folder's CA was replaced) is reissued
    (root / "ca.crt").unlink()
    (root / "ca.key").unlink()
    fresh = CertificateFolder.open(str(root), now=NOW)
    assert fresh.issue_proxies([("app", "edge")], now=NOW) == [root / "proxies" / "app" / "edge"]
    # an expired one too
    later = NOW + datetime.timedelta(days=400)
    assert fresh.issue_proxies([("app", "edge")], now=later) == [root / "proxies" / "app" / "edge"]


def test_a_proxy_certificate_is_renewed_a_month_before_it_expires(tmp_path: Path) -> None:
    folder = CertificateFolder.open(str(tmp_path), now=NOW)
    assert folder.issue_proxies([("app", "edge")], now=NOW) == [tmp_path / "proxies/app/edge"]
    due = NOW + DEFAULT_VALIDITY - RENEW_BEFORE
    assert folder.issue_proxies([("app", "edge")], now=due - datetime.timedelta(hours=1)) == []
    renewed = folder.issue_proxies([("app", "edge")], now=due + datetime.timedelta(hours=1))
    assert renewed == [tmp_path / "proxies/app/edge"]


def test_serve_renews_proxy_certificates_with_time_not_only_when_manifests_change(
    tmp_path: Path,
) -> None:
    folder = CertificateFolder.open(str(tmp_path), now=NOW)
    edge = folder.proxy_folder("app", "edge")
    edge.mkdir(parents=True)
    # a certificate a week from expiry, as a server that ran for 358 days would hold
    issued = folder.ca.issue_proxy(
        namespace="app", name="edge", now=NOW, validity=datetime.timedelta(days=7)
    )
    (edge / "tls.crt").write_bytes(issued.cert_pem)
    (edge / "tls.key").write_bytes(issued.key_pem)
    (edge / "ca.crt").write_bytes(folder.ca.cert_pem)
    publisher = SimpleNamespace(grants=[("app", "edge")])

    async def main() -> None:
        with trio.move_on_after(RENEW_CHECK_INTERVAL * 1.5):
            await serve._renew_proxy_certificates(folder, publisher)  # type: ignore[arg-type]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    renewed = (edge / "tls.crt").read_bytes()
    assert renewed != issued.cert_pem
    verify_issued_by(renewed, folder.ca.cert_pem, now=NOW + datetime.timedelta(days=300))
