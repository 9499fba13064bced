"""The codec and proxy tests again, on the HTTP/1.1 codec compiled with mypyc.

Run by ``make test`` after the suite: ``.venv/bin/python tests/compiled.py [pytest args]``.

Why: the container image ships the codec compiled (``COXSWAIN_MYPYC=1``, setup.py), the
editable install ``make test`` uses runs it interpreted. Compiled code checks the declared
types of arguments at run time and refuses what plain Python lets through, so the shipped
build must pass the tests that exercise the codec, not only the interpreted one.

How: the sources and tests are copied to a temporary folder, setup.py's modules are built in
place there (``setup.py build_ext --inplace``, so the module list has one home), the copy is
checked to run compiled, and pytest runs the files below from it, with the copy first on
``PYTHONPATH`` so that the proxies those tests start as subprocesses import it too, and
``COXSWAIN_EXPECT_CODEC_BUILD=compiled`` so that the run stops if the codec it imports is not
compiled (tests/conftest.py). The project's own folder is never written to. The build uses the
venv's mypy, pinned in the test extra to the version the image's build pins. The copy and
build steps are the benchmarks' (bench/harness.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import harness  # noqa: E402 - found through the line above, as the benchmarks find it

TESTS = (
    "tests/unit/test_http1_codecs.py",
    "tests/unit/test_http1_requests.py",
    "tests/unit/test_http1_responses.py",
    "tests/unit/test_http1_serialize.py",
    "tests/property/test_http1_differential.py",
    "tests/property/test_http1_bodies.py",
    "tests/unit/test_connection.py",
    "tests/unit/test_proxy_units.py",
    "tests/unit/test_forward.py",
    "tests/integration/test_proxy_http.py",
    "tests/integration/test_proxy_mirrors_timeouts.py",
    "tests/integration/test_proxy_lifecycle.py",
    "tests/integration/test_proxy_memory.py",
    "tests/integration/test_proxy_metrics.py",
    "tests/unit/test_http2_hpack.py",
    "tests/unit/test_http2_server.py",
    "tests/unit/test_http2_request.py",
    "tests/unit/test_http2_client.py",
    "tests/property/test_http2_hpack_props.py",
    "tests/integration/test_proxy_http2.py",
    "tests/integration/test_proxy_grpc.py",
    "tests/hostile/test_hostile_http2.py",
)


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="coxswain-compiled-") as folder:
        copy = harness.copy_project(ROOT, Path(folder), (*harness.PROJECT_FILES, "tests"))
        harness.compile_codec(copy)
        print(f"the codec compiled with mypyc in {copy}; running {len(TESTS)} test files")
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *TESTS, *argv]
        # the copy first on every path, whatever folder a test starts a proxy in, and a run
        # that stops unless the codec it imports is the compiled one (tests/conftest.py)
        env = dict(os.environ, PYTHONPATH=str(copy), COXSWAIN_EXPECT_CODEC_BUILD="compiled")
        return subprocess.run(command, cwd=copy, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
