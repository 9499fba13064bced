"""The one collected pytest session of `make mutate`'s workers (tools/mutate/collected.py): a
forked worker's verdict on its tests is the verdict a pytest session of its own would give.

A small project of tests is collected in a subprocess (a second pytest configuration must not
configure itself into this session's process); the script forks a worker per case, as mutmut's
process does, and prints each worker's exit code.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROJECT = {
    "pytest.ini": """\
        [pytest]
        xfail_strict = true
        filterwarnings = error
        """,
    "test_cases.py": """\
        import os
        import warnings

        import pytest

        SWITCH = "COLLECTED_TEST_FAIL"
        opened = []


        @pytest.fixture(scope="module")
        def resource():
            opened.append(1)
            yield len(opened)


        def test_passes(resource):
            assert resource == 1


        def test_fails_when_switched():
            assert os.environ.get(SWITCH) != "1"


        def test_warns():
            warnings.warn("a warning the configuration makes an error", UserWarning)


        @pytest.mark.xfail(reason="strict: passing is a failure")
        def test_passes_against_its_mark():
            pass


        def test_errors_in_setup(no_such_fixture):
            pass


        def test_reads_a_file_beside_it():
            with open("data.txt") as data:
                assert data.read() == "here"


        def test_captures(capsys):
            print("out")
            assert capsys.readouterr().out == "out\\n"


        def test_loops():
            while True:
                pass
        """,
    "data.txt": "here",
}

SCRIPT = """\
import json, os, pathlib, sys
sys.path.insert(0, sys.argv[1])
from collected import Collected, Limits

root = pathlib.Path(sys.argv[2])
cases = json.loads(sys.argv[3])
os.chdir("/")  # the collection and the workers change to the project themselves
# no stats run here: every test's time is 0, so its CPU limit is the constant
session = Collected(["-q", "-p", "no:cacheprovider"], root, {}, Limits(constant=1, budget=60))
verdicts = {}
for name, (tests, switched, budget) in cases.items():
    pid = os.fork()
    if pid == 0:
        if switched:
            os.environ["COLLECTED_TEST_FAIL"] = "1"
        if budget is not None:
            session.limits = Limits(constant=1, budget=budget)
        os._exit(session.run(tests))
    verdicts[name] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

def switch(on):
    os.environ["COLLECTED_TEST_FAIL"] = "1" if on else "0"

session.check(["test_cases.py::test_passes", "test_cases.py::test_fails_when_switched"], switch)
try:
    session.check(["test_cases.py::test_passes"], switch)
    verdicts["check that cannot fail"] = "accepted"
except RuntimeError as refused:
    verdicts["check that cannot fail"] = str(refused)
print(json.dumps(verdicts))
"""


Case = tuple[list[str], bool, float | None]  # node ids, the switch on, a budget (else 60 s)


def _verdicts(tmp_path: Path, cases: dict[str, Case]) -> dict[str, object]:
    for name, text in PROJECT.items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            str(ROOT / "tools" / "mutate"),
            str(tmp_path),
            json.dumps(cases),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    verdicts: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return verdicts


def test_a_worker_gives_the_verdict_of_a_session_of_its_own(tmp_path):
    t = "test_cases.py::"
    verdicts = _verdicts(
        tmp_path,
        {
            "passing": ([t + "test_passes", t + "test_fails_when_switched"], False, None),
            "a failure stops the run": (
                [t + "test_fails_when_switched", t + "test_passes"],
                True,
                None,
            ),
            "a warning is an error": ([t + "test_warns"], False, None),
            "a strict xfail that passes": ([t + "test_passes_against_its_mark"], False, None),
            "an error in setup": ([t + "test_errors_in_setup"], False, None),
            "a file beside the tests": ([t + "test_reads_a_file_beside_it"], False, None),
            "capsys": ([t + "test_captures"], False, None),
            "a test not collected": ([t + "test_passes", t + "test_nothing"], False, None),
            "an endless test is stopped": ([t + "test_passes", t + "test_loops"], False, None),
            "the budget spent before the last test": (
                [t + "test_passes", t + "test_fails_when_switched"],
                True,
                0.0,
            ),
            "the budget spent at the last test": ([t + "test_passes"], False, 0.0),
        },
    )
    assert verdicts == {
        "passing": 0,
        "a failure stops the run": 1,
        "a warning is an error": 1,
        "a strict xfail that passes": 1,
        "an error in setup": 1,
        "a file beside the tests": 0,
        "capsys": 0,
        "a test not collected": 4,
        "an endless test is stopped": -signal.SIGXCPU,
        "the budget spent before the last test": 35,
        "the budget spent at the last test": 0,
        "check that cannot fail": (
            "the collected session's check: 1 tests with the forced failure on exited 0, not 1"
        ),
    }
