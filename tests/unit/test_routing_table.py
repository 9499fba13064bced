"""`coxswain compile -o table`: the routing table people read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_table_lists_ingress_paths_and_gateway_rules_with_their_backends():
    done = subprocess.run(
        [sys.executable, "-m", "coxswain", "compile", "-f", "examples/", "-o", "table"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["PORT", "HOST", "MATCH", "ROUTE", "BACKENDS"]
    assert any(
        "demo.example.com" in line and "Prefix /api" in line and "demo/api:8080" in line
        for line in lines
    )
    assert any(
        line.startswith("30000 (8080)") and "demo/api:8080*90, demo/web:80*10" in line
        for line in lines
    )
