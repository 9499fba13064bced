"""HTTP/1.1 wire codec for the proxy, sans-IO, with two head implementations (RFC 9112).

Layout (read the module docstrings in this order):

- :mod:`.events`: the event types both sides and both implementations produce.
- :mod:`.interface`: :class:`HeadCodec`, the one small interface (parse a complete head).
- :mod:`.h11_codec` (reference) and :mod:`.llhttp_codec` (httptools, default) implement it;
  :mod:`.codec` picks one by name.
- :mod:`.syntax`: the shared head rules (lexical and smuggling defenses) giving one verdict.
- :mod:`.body`: shared body framing (sized, chunked, close-delimited).
- :mod:`.parser`: :class:`RequestParser` (server side) and :class:`ResponseParser` (client
  side), the state machines that tie it together.
- :mod:`.serialize`: writing heads and chunks.
"""

from coxswain.http1.codec import (
    CODEC_NAMES,
    DEFAULT_CODEC,
    CodecName,
    codec_build,
    codec_named,
)
from coxswain.http1.events import (
    CONNECTION_CLOSED,
    NEED_DATA,
    PAUSED,
    ConnectionClosed,
    Data,
    EndOfMessage,
    Event,
    Headers,
    NeedData,
    Paused,
    ProtocolError,
    RequestHead,
    ResponseHead,
)
from coxswain.http1.interface import HeadCodec, HeadRejected
from coxswain.http1.parser import (
    DEFAULT_LIMITS,
    HeadMemo,
    Limits,
    RequestParser,
    ResponseParser,
)
from coxswain.http1.serialize import (
    RequestFramer,
    frame_chunk,
    frame_last_chunk,
    frame_request_head,
    frame_response_head,
)

__all__ = [
    "CODEC_NAMES",
    "CONNECTION_CLOSED",
    "DEFAULT_CODEC",
    "DEFAULT_LIMITS",
    "NEED_DATA",
    "PAUSED",
    "CodecName",
    "ConnectionClosed",
    "Data",
    "EndOfMessage",
    "Event",
    "HeadCodec",
    "HeadMemo",
    "HeadRejected",
    "Headers",
    "Limits",
    "NeedData",
    "Paused",
    "ProtocolError",
    "RequestFramer",
    "RequestHead",
    "RequestParser",
    "ResponseHead",
    "ResponseParser",
    "codec_build",
    "codec_named",
    "frame_chunk",
    "frame_last_chunk",
    "frame_request_head",
    "frame_response_head",
]
