"""Hostile clients: parsing a request costs time linear in its bytes, at every parse point.

A backtracking regular expression over client bytes let one request hold a worker for seconds
(a chunked request whose trailer line carried 40 KB of spaces). Two guards:

- **Growth**: each client-facing parse point (head syntax, framing fields, Host, request
  target, trailers, chunk lines, and the route's path, Host and query handling) is fed
  adversarial input of N and 4N bytes, for both head codecs (:mod:`coxswain.http1.codec`);
  the best time at 4N must stay under 8 times the best at N (linear gives about 4, quadratic
  16). The runs happen in a subprocess with a deadline,
  because a backtracking pattern does not return on these inputs in any useful time; the
  deadline only ends such a run, and the assertion is on proportions, not on speed. A run with
  a ratio over the bound is repeated a few times before it counts, to ride out a busy machine.
  Each run also reports the verdict, so an input refused before the parse point it aims at
  cannot pass unnoticed.
- **Shape**: every regular expression in the modules that read client bytes is on an
  allow-list of patterns checked by hand to be linear (see :data:`LINEAR_PATTERNS`); a new one
  fails the test until it is reviewed and listed.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

from tests.hostile.script_runs import run_script

if TYPE_CHECKING:
    from types import ModuleType

# 4N is about the default head limit (parser.DEFAULT_MAX_HEAD_BYTES, 60 KiB), the most a client
# can send in one head or trailer section; past it the CPU caches, not the algorithm, make a
# linear parse slower per byte, and the proportions below stop telling linear from not.
N: Final = 16 * 1024
DEADLINE: Final = 30.0  # seconds for one run of both sizes; linear code needs well under one
ATTEMPTS: Final = 4
BOUND: Final = 8.0

# The script run in the subprocess: parse each payload ``repeats`` times, keep the best time
# and the verdict (the last event's type and status, or the route's answers).
_TIMING_SCRIPT = r"""
import json, sys, time
from coxswain.http1.codec import codec_named
from coxswain.http1.events import Data, NeedData, ProtocolError
from coxswain.http1.parser import Limits, RequestParser, ResponseParser
from coxswain.route.gateway import parse_query
from coxswain.route.paths import normalize_path, split_target
from coxswain.route.select import host_of, port_of

kind, codec, payloads, repeats = json.loads(sys.stdin.read())
limits = Limits(max_head_bytes=1 << 22)

def request(data):
    parser = RequestParser(codec_named(codec), limits=limits)
    parser.receive_data(data)
    while True:
        event = parser.next_event()
        if type(event) is ProtocolError:
            return f"{event.status} {event.reason}"
        if type(event) is not Data and type(event).__name__ != "RequestHead":
            return type(event).__name__

def drip(data):
    parser = RequestParser(codec_named(codec), limits=limits)
    for at in range(0, len(data), 16):
        parser.receive_data(data[at : at + 16])
        while True:
            event = parser.next_event()
            if type(event) is ProtocolError:
                return f"{event.status} {event.reason}"
            if type(event) is NeedData:
                break
            if type(event) is not Data and type(event).__name__ != "RequestHead":
                return type(event).__name__
    return "NeedData"

def response(data):
    parser = ResponseParser(codec_named(codec), limits=limits)
    parser.expect_response(b"GET")
    parser.receive_data(data)
    while True:
        event = parser.next_event()
        if type(event) is ProtocolError:
            return f"{event.status} {event.reason}"
        if type(event) is not Data and type(event).__name__ != "ResponseHead":
            return type(event).__name__

def route(data):
    target, _, host = data.decode("latin-1").partition("\n")
    path, query = split_target(target)
    return [normalize_path(path)[:8], host_of(host)[:8], port_of(host)[:8], len(parse_query(query))]

run = {"request": request, "drip": drip, "response": response, "route": route}[kind]
found = []
for payload in payloads:
    data = payload.encode("latin-1")
    best, verdict = float("inf"), None
    for _ in range(repeats):
        started = time.process_time()  # CPU time: other processes' turns do not count
        verdict = run(data)
        best = min(best, time.process_time() - started)
    found.append([best, verdict if isinstance(verdict, str) else json.dumps(verdict)])
print(json.dumps(found))
"""


def _measure(kind: str, codec: str, payloads: list[bytes], repeats: int) -> list[tuple[float, str]]:
    """(best time, verdict) for each payload; fails when the run misses ``DEADLINE``."""
    found = run_script(
        _TIMING_SCRIPT,
        [kind, codec, [p.decode("latin-1") for p in payloads], repeats],
        deadline=DEADLINE,
        what=f"parsing {sum(map(len, payloads))} bytes",
    )
    return [(t, str(v)) for t, v in found]


def _head(*fields: bytes, target: bytes = b"/") -> bytes:
    return b"GET " + target + b" HTTP/1.1\r\nHost: a\r\n" + b"".join(fields) + b"\r\n"


def _chunked(body: bytes) -> bytes:
    return b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + body


def _spaces(n: int) -> bytes:
    return b" " * n


# Each case: (name, kind, build(n) -> about n bytes of adversarial input, how the verdict starts).
CASES: Final = [
    # head: field values
    ("value-spaces", "request", lambda n: _head(b"X: a" + _spaces(n) + b"b\r\n"), "EndOfMessage"),
    (
        "value-spaces-trailing",
        "request",
        lambda n: _head(b"X: a" + _spaces(n) + b"\r\n"),
        "EndOfMessage",
    ),
    (
        "value-spaces-ctl",
        "request",
        lambda n: _head(b"X: a" + _spaces(n) + b"\x01\r\n"),
        "400 control character in field value",
    ),
    (
        "value-tabs-del",
        "request",
        lambda n: _head(b"X:" + b" \t" * (n // 2) + b"\x7f\r\n"),
        "400 control character in field value",
    ),
    ("many-fields", "request", lambda n: _head(b"a:\r\n" * (n // 4)), "EndOfMessage"),
    (
        "long-cookie",
        "request",
        lambda n: _head(b"Cookie: " + b"a=b; " * (n // 5) + b"c=d\r\n"),
        "EndOfMessage",
    ),
    (
        "obs-fold",
        "request",
        lambda n: _head(b"X: a\r\n" + _spaces(n) + b"b\r\n"),
        "400 obsolete line folding (obs-fold) in the header section",
    ),
    (
        "obs-fold-lines",
        "request",
        lambda n: _head(b"X: a\r\n" + b" b\r\n" * (n // 4)),
        "400 obsolete line folding (obs-fold) in the header section",
    ),
    (
        "space-before-colon",
        "request",
        lambda n: _head(b"X" + _spaces(n) + b": a\r\n"),
        "400 whitespace between field name and colon",
    ),
    (
        "bare-cr",
        "request",
        lambda n: _head(b"X: " + b"a\r" * (n // 2) + b"\r\n"),
        "400 line ending is not CRLF (bare CR or LF)",
    ),
    # head: framing fields
    (
        "content-length-spaces",
        "request",
        lambda n: _head(b"Content-Length: 1" + _spaces(n) + b"x\r\n"),
        "400 ",  # llhttp refuses the field itself
    ),
    (
        "content-length-padded",
        "request",
        lambda n: _head(b"Content-Length:" + _spaces(n) + b"0" + _spaces(n) + b"\r\n"),
        "EndOfMessage",
    ),
    (
        "transfer-encoding-spaces",
        "request",
        lambda n: _head(b"Transfer-Encoding: x" + _spaces(n) + b"chunked\r\n"),
        "400 ",  # h11 refuses the field itself
    ),
    # head: Host
    (
        "host-colons",
        "request",
        lambda n: b"GET / HTTP/1.1\r\nHost: a" + b":" * n + b"\r\n\r\n",
        "400 invalid Host",
    ),
    (
        "host-ipv6-unclosed",
        "request",
        lambda n: b"GET / HTTP/1.1\r\nHost: [" + b":" * n + b"\r\n\r\n",
        "400 invalid Host",
    ),
    # head: request target
    ("target-dots", "request", lambda n: _head(target=b"/" + b"./" * (n // 2)), "EndOfMessage"),
    ("target-percent", "request", lambda n: _head(target=b"/" + b"%" * n), "EndOfMessage"),
    (
        "target-absolute",
        "request",
        lambda n: _head(target=b"http://" + b"a" * n + b"@"),
        "400 request target is not origin-form, absolute-form or asterisk-form",
    ),
    # chunked bodies: chunk lines with extensions, trailers
    (
        "chunk-extensions",
        "request",
        lambda n: _chunked(b'1;a=b;c="\\"x"\r\nx\r\n' * (n // 20) + b"0\r\n\r\n"),
        "EndOfMessage",
    ),
    (
        "trailer-spaces",
        "request",
        lambda n: _chunked(b"0\r\nX:" + _spaces(n) + b"\x7f\r\n\r\n"),
        "400 invalid trailer field line",
    ),
    (
        "trailer-spaces-valid",
        "request",
        lambda n: _chunked(b"0\r\nX: a" + _spaces(n) + b"b" + _spaces(n) + b"\r\n\r\n"),
        "EndOfMessage",
    ),
    (
        "trailer-dripped",
        "drip",
        lambda n: _chunked(b"0\r\nX: a" + _spaces(n) + b"\r\n\r\n"),
        "EndOfMessage",
    ),
    ("head-dripped", "drip", lambda n: _head(b"X: a" + _spaces(n) + b"\r\n"), "EndOfMessage"),
    (
        "trailer-many-lines",
        "request",
        lambda n: _chunked(b"0\r\n" + b"a:\r\n" * (n // 4) + b"\r\n"),
        "EndOfMessage",
    ),
    # responses from an upstream share the rules
    (
        "response-reason-spaces",
        "response",
        lambda n: b"HTTP/1.1 200 " + _spaces(n) + b"\x01\r\n\r\n",
        "502 upstream: malformed header section",
    ),
    (
        "response-content-length",
        "response",
        lambda n: b"HTTP/1.1 200 OK\r\nContent-Length: 1" + _spaces(n) + b"x\r\n\r\n",
        "502 ",
    ),
    # the route: path normalisation, Host, query
    ("route-path-dots", "route", lambda n: b"/.." * (n // 3) + b"\nh", '["/", "h", "", 0]'),
    ("route-path-slashes", "route", lambda n: b"/" + b"/" * n + b"a\nh", '["/a", "h", "", 0]'),
    (
        "route-path-percent",
        "route",
        lambda n: b"/" + b"%2e%" * (n // 4) + b"\nh",
        '["/.%.%.%.", "h", "", 0]',
    ),
    ("route-host-colons", "route", lambda n: b"/\n" + b"a:" * (n // 2), '["/", "a:a:a:a:", "", 0]'),
    ("route-query", "route", lambda n: b"/?" + b"%4%&=" * (n // 5), '["/", "", "", 2]'),
]
CODECS: Final = ("h11", "llhttp")


def _params() -> list[object]:
    found: list[object] = []
    for name, kind, build, verdict in CASES:
        for codec in CODECS if kind != "route" else ("-",):
            found.append(pytest.param(kind, codec, build, verdict, id=f"{name}-{codec}"))
    return found


@pytest.mark.parametrize(("kind", "codec", "build", "verdict"), _params())
def test_parse_time_grows_linearly(kind: str, codec: str, build: object, verdict: str) -> None:
    assert callable(build)
    short, long = build(N), build(4 * N)
    ratios: list[float] = []
    for _ in range(ATTEMPTS):
        (t_short, v_short), (t_long, v_long) = _measure(kind, codec, [short, long], repeats=7)
        assert v_short.startswith(verdict), v_short
        assert v_long.startswith(verdict), v_long
        ratios.append(t_long / t_short)
        if ratios[-1] < BOUND:
            return
    pytest.fail(f"time(4N)/time(N) = {[round(r, 1) for r in ratios]} (N = {N} bytes)")


# --- the shape of every pattern over client bytes -------------------------------------------------

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_VALUE = r"[\t\x20-\x7e\x80-\xff]*"

# Reviewed: each quantified class is followed by a byte outside it (or the end), alternatives
# start with disjoint bytes, and nothing is quantified twice over overlapping classes, so
# Python's engine matches or fails in time linear in the subject.
LINEAR_PATTERNS: Final = {
    "coxswain.http1.body._CHUNK_LINE": r"([0-9A-Fa-f]{1,16})(?:;"
    + _TOKEN
    + r"(?:=(?:"
    + _TOKEN
    + r'|"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t\x20-\x7e\x80-\xff])*"))?)*\r\n',
    "coxswain.http1.serialize._TOKEN": _TOKEN,
    "coxswain.http1.serialize._VALUE": _VALUE,
    "coxswain.http1.serialize._TARGET": r"[\x21-\x7e]+",
    "coxswain.http1.serialize._REASON": _VALUE,
    "coxswain.http1.syntax._REQUEST_HEAD": f"({_TOKEN}) "
    + r"[\x21\x22\x24-\x7e]+ HTTP/1\.[01]\r\n(?:"
    + f"{_TOKEN}:{_VALUE}"
    + r"\r\n)*\r\n",
    "coxswain.http1.syntax._RESPONSE_HEAD": r"HTTP/1\.[01] [0-9]{3}(?: "
    + _VALUE
    + r")?\r\n(?:"
    + f"{_TOKEN}:{_VALUE}"
    + r"\r\n)*\r\n",
    "coxswain.http1.syntax._REQUEST_LINE": _TOKEN + r" [\x21\x22\x24-\x7e]+ HTTP/1\.[01]",
    "coxswain.http1.syntax._STATUS_LINE": r"HTTP/1\.[01] [0-9]{3}(?: .*)?",
    "coxswain.http1.syntax._FIELD_NAME": _TOKEN,
    "coxswain.http1.syntax._FIELD_VALUE": _VALUE,
    "coxswain.http1.syntax._BARE_LINE_BREAK": r"(?<!\r)\n|\r[^\n]",
    "coxswain.http1.syntax._CONTENT_LENGTH": r"[0-9]{1,18}",
    "coxswain.http1.syntax._HOST": r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)"
    r"(?::[0-9]*)?",
    "coxswain.http1.syntax._ABSOLUTE_FORM": r"(?i)https?://[^/?#@\s]+(?:[/?][\x21-\x7e]*)?",
    "coxswain.route.gateway._ESCAPE": r"%([0-9A-Fa-f]{2})",
    # on snapshot text (a rewrite target, a redirect URL, an auth-signin URL or cache key): one
    # token per position, a '$' then one character class, no nested repetition
    "coxswain.route.ingress_actions._GROUP": r"\$(\d)",
    "coxswain.route.ingress_actions._VARIABLE": r"\$([a-z_]+)",
    "coxswain.route.external_auth._VARIABLE": r"\$([a-z_]+)",
    "coxswain.route.external_auth._KEY_VARIABLE": r"\$([A-Za-z_][A-Za-z0-9_]*)",
    "coxswain.route.paths._UNRESERVED_ESCAPE": r"%(2[dDeE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]"
    r"|5[fF]|7[eE])",
    "coxswain.route.paths._NEEDS_WORK": r"//|/\.|%",
}
CLIENT_PACKAGES: Final = ("coxswain.http1", "coxswain.route", "coxswain.shell.dataplane")


def _client_modules() -> list[ModuleType]:
    found = []
    for package in map(importlib.import_module, CLIENT_PACKAGES):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            found.append(importlib.import_module(info.name))
    return found


def test_every_pattern_over_client_bytes_is_reviewed_as_linear() -> None:
    seen = {}
    for module in _client_modules():
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and f"{module.__name__}.{name}" not in seen:
                text = value.pattern
                seen[f"{module.__name__}.{name}"] = (
                    text.decode("latin-1") if isinstance(text, bytes) else text
                )
    assert seen == LINEAR_PATTERNS


def test_patterns_over_client_bytes_are_compiled_where_the_review_sees_them() -> None:
    # A call such as re.sub(pattern, ...) inside a function would escape the allow-list.
    for module in _client_modules():
        tree = ast.parse(Path(module.__file__ or "").read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
            ):
                assert node.func.attr == "compile", (
                    f"{module.__name__}:{node.lineno} re.{node.func.attr}"
                )
                assert _at_module_level(tree, node), f"{module.__name__}:{node.lineno}"


def _at_module_level(tree: ast.Module, call: ast.Call) -> bool:
    return any(
        call in ast.walk(statement)
        for statement in tree.body
        if isinstance(statement, ast.Assign | ast.AnnAssign)
    )
