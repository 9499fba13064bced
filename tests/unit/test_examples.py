"""examples/ as committed: the README's ``coxswain compile -f examples/`` prints no finding, and
the demo's public certificate (examples/demo-tls.yaml, issued by examples/demo-ca.crt) is good
for a year yet."""

from __future__ import annotations

import base64
import datetime
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from coxswain.cli import main
from coxswain.shell.discovery.ca import IdentityError, verify_issued_by

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "`python examples/demo.py --new-certificates`, then commit what it wrote"


def test_the_examples_compile_without_a_finding_and_serve_every_listener(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compile", "-f", str(ROOT / "examples"), "-o", "table"]) == 0
    printed = capsys.readouterr()
    assert printed.err == ""
    ports = {line.split("  ")[0] for line in printed.out.splitlines()[1:]}
    # The Ingress with its certificate, and both Gateway listeners (HTTPS needs the Secret).
    assert ports == {"80,443", "30000 (8080)", "30001 (8443)"}
    assert "(https redirect)" in printed.out


def test_the_demo_certificate_is_good_for_a_year_yet() -> None:
    secret = yaml.safe_load((ROOT / "examples" / "demo-tls.yaml").read_text())
    cert_pem = base64.b64decode(secret["data"]["tls.crt"])
    ca_pem = (ROOT / "examples" / "demo-ca.crt").read_bytes()
    a_year_on = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=365)
    try:
        verify_issued_by(cert_pem, ca_pem, now=a_year_on)
    except IdentityError as err:
        pytest.fail(f"examples/demo-tls.yaml, a year from now: {err}. Issue new ones: {REGENERATE}")
    ca = x509.load_pem_x509_certificate(ca_pem)
    assert ca.not_valid_after_utc > a_year_on, f"examples/demo-ca.crt expires soon: {REGENERATE}"
    names = x509.load_pem_x509_certificate(cert_pem).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert names.value.get_values_for_type(x509.DNSName) == [
        "demo.example.com",
        "*.gateway.example.com",
    ]
