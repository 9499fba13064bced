"""The committed protobuf code is what proto/generate.py makes from the .proto today."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_code_is_not_stale(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "proto" / "generate.py"), str(tmp_path)],
        check=True,
        capture_output=True,
    )
    committed = ROOT / "coxswain" / "_proto"
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    kept = sorted(
        p.relative_to(committed)
        for p in committed.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    assert fresh == kept, "run `make proto` and commit coxswain/_proto"
    stale = [str(p) for p in fresh if not filecmp.cmp(tmp_path / p, committed / p, shallow=False)]
    assert not stale, f"stale generated files {stale}: run `make proto` and commit them"


def test_a_zero_value_scope_names_no_kind() -> None:
    from coxswain._proto.discovery.v1 import discovery_pb2 as pb
    from coxswain.shell.discovery.snapshot_decode import decode_scope

    assert decode_scope(pb.Scope()) is None
    subscribe = pb.Subscribe(node_id="n")
    assert not subscribe.HasField("scope")  # absent scope: SharedPool, decided by the server
