"""Choosing the HTTP/1.1 head implementation by name (docs/architecture.md, "Data-plane rules").

``llhttp`` (httptools) is the default because it is fast; ``h11`` is the reference, kept in
agreement by tests/property/test_http1_differential.py. Both are stateless, so one instance
each is shared.
"""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES
from typing import TYPE_CHECKING, Final, Literal

import coxswain.http1.body as body
import coxswain.http1.events as events
import coxswain.http1.llhttp_codec as llhttp_codec
import coxswain.http1.parser as parser
import coxswain.http1.serialize as serialize
import coxswain.http1.syntax as syntax
from coxswain.http1.h11_codec import H11Codec
from coxswain.http1.llhttp_codec import LlhttpCodec

if TYPE_CHECKING:
    from coxswain.http1.interface import HeadCodec

__all__ = ["CODEC_NAMES", "DEFAULT_CODEC", "CodecName", "codec_build", "codec_named"]

CodecName = Literal["h11", "llhttp"]
DEFAULT_CODEC: Final[CodecName] = "llhttp"
CODEC_NAMES: Final[tuple[CodecName, ...]] = ("h11", "llhttp")

_CODECS: Final[dict[str, HeadCodec]] = {"h11": H11Codec(), "llhttp": LlhttpCodec()}


def codec_named(name: CodecName = DEFAULT_CODEC) -> HeadCodec:
    """The shared instance of the named implementation.

    Args:
        name: ``"h11"`` or ``"llhttp"``.

    Returns:
        The head codec.

    Raises:
        ValueError: an unknown name (from settings, say).
    """
    try:
        return _CODECS[name]
    except KeyError:
        raise ValueError(f"unknown HTTP/1.1 codec {name!r}; choose h11 or llhttp") from None


# setup.py's COMPILED, as modules (tests/unit/test_build.py keeps the two lists equal)
NATIVE_MODULES: Final = (events, syntax, body, llhttp_codec, parser, serialize)


def codec_build() -> str:
    """How this installation runs the shared codec: ``"compiled"`` when setup.py's modules
    were built with mypyc (``COXSWAIN_MYPYC=1``, the container image), ``"interpreted"``
    when none was, ``"partly compiled"`` for a broken mix. Shown by ``coxswain --version``
    and logged when a proxy starts, because the builds differ in speed (docs/benchmarks.md)
    and nothing else should tell them apart."""
    native = [(m.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES)) for m in NATIVE_MODULES]
    if all(native):
        return "compiled"
    return "partly compiled" if any(native) else "interpreted"
