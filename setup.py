"""Build hook: the optional native build of the proxy's HTTP/1.1 codec.

Everything about the package is declared in pyproject.toml; this file only adds extension
modules, and only when ``COXSWAIN_MYPYC=1`` is set at build time (the container image sets it,
see the Dockerfile): the modules in :data:`COMPILED` are then compiled to C with mypyc, the
compiler that ships with mypy. They are plain, strictly typed Python, so the compiled and the
interpreted package behave alike; ``make test`` runs the codec and proxy tests against both
(tests/compiled.py). Why: the codec parses and writes every head the proxy handles, and the
proxy is CPU-bound; compiled, a small proxied request costs about 12% fewer user-space
instructions; its CPU time moved by 0–2% on the shared machine the figures come from, inside
the noise there (docs/benchmarks.md, "The HTTP/1.1 codec compiled with mypyc").

Only synchronous modules are compiled (tests/unit/test_build.py holds it). mypyc's
coroutines keep the exception being handled differently from CPython's across an ``await``
(``sys.exc_info()`` survives it): with the proxy's connection loop compiled too, a 502 that had
been caught and answered came back out of the connection task once it ended. Compiling the
async request path as well would take a request from 303,587 to 263,802 instructions (that
experiment's figures); it waits for mypyc.

What else compiled code changes, for code that calls into these modules or tests them:
arguments are checked against their annotations at run time (a ``bytearray`` where ``bytes``
is declared raises TypeError, hence ``bytes(data)`` in ``wire.EventReader``); module constants
are compiled in, so patching one in a test changes nothing; interpreted classes cannot
subclass compiled ones.

Without the variable the build is pure Python and needs no C compiler. Only wheels are built
natively (build_backend/ refuses a native editable install), so no native module lands beside
the sources to shadow later edits of them (tests/unit/test_build.py checks the tree).
"""

from __future__ import annotations

import os

from setuptools import setup

COMPILED = [
    "coxswain/http1/events.py",
    "coxswain/http1/syntax.py",
    "coxswain/http1/body.py",
    "coxswain/http1/llhttp_codec.py",
    "coxswain/http1/parser.py",
    "coxswain/http1/serialize.py",
    "coxswain/http2/events.py",
    "coxswain/http2/frames.py",
    "coxswain/http2/hpack_tables.py",
    "coxswain/http2/hpack.py",
    "coxswain/http2/server.py",
    "coxswain/http2/fields.py",
    "coxswain/http2/response.py",
    "coxswain/http2/request.py",
    "coxswain/http2/connection.py",
    "coxswain/http2/client.py",
    "coxswain/http2/backend.py",
]

if os.environ.get("COXSWAIN_MYPYC") == "1":
    from mypyc.build import mypycify

    setup(ext_modules=mypycify(COMPILED, opt_level="3", group_name="coxswain_http1"))
else:
    setup()
