"""``make run``'s demo (examples/demo.py) works on a fresh checkout: certificates generated,
the sample backend and ``coxswain serve`` started, and each printed ``curl`` line answered."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_serves_every_request_it_prints(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--check", "--state", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "ca.crt").exists()
    assert (tmp_path / "manifests" / "demo-tls.yaml").exists()
    answered = [line for line in done.stdout.splitlines() if "answered" in line]
    assert len(answered) == 4
    # plain HTTP to a TLS host: redirected to the HTTPS port the demo serves (README, Ingress)
    assert "answered 308, Location: https://demo.example.com:8443/ just now" in answered[0]
    assert all("answered 200" in line for line in answered[1:])
    assert done.stdout.count("curl ") == 4
