"""Generate the Python code of the discovery protocol into coxswain/_proto (``make proto``).

protoc names generated modules after the proto path, so ``discovery/v1/discovery.proto`` is
compiled from ``proto/coxswain`` into ``coxswain/_proto/discovery/v1/`` and the one absolute
import the gRPC stub makes is rewritten to point inside the package. The generated files are
committed; ``tests/unit/test_proto_generated.py`` regenerates them into a temporary folder and
fails when the committed ones are stale.

Usage: ``python proto/generate.py [OUTPUT_DIR]`` (default: coxswain/_proto).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "proto" / "coxswain"
PROTO = "discovery/v1/discovery.proto"
PACKAGE = "coxswain._proto"


def generate(output: Path) -> None:
    """Run protoc (grpcio-tools) with the mypy plugin and fix the generated imports."""
    output.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{SOURCE}",
            f"--python_out={output}",
            f"--grpc_python_out={output}",
            f"--mypy_out={output}",
            f"--mypy_grpc_out={output}",
            PROTO,
        ],
        check=True,
        env=env,
    )
    for folder in (output / "discovery", output / "discovery" / "v1"):
        (folder / "__init__.py").touch()
    (output / "__init__.py").write_text(
        '"""Generated protobuf and gRPC code of the discovery protocol (proto/generate.py)."""\n'
    )
    for path in sorted((output / "discovery" / "v1").glob("*.py*")):
        text = path.read_text()
        fixed = text.replace("from discovery.v1 import", f"from {PACKAGE}.discovery.v1 import")
        fixed = fixed.replace("import discovery.v1.", f"import {PACKAGE}.discovery.v1.")
        path.write_text(fixed)


def main() -> None:
    output = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "coxswain" / "_proto"
    if output.exists() and len(sys.argv) == 1:
        shutil.rmtree(output)
    generate(output)


if __name__ == "__main__":
    main()
