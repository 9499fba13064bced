"""HTTP/2 frames (RFC 9113 §4.1, §6): the nine-byte frame header, the frames a server writes,
and the payloads of the control frames it reads. Pure.

Numbers stay plain ``int`` (types, flags, error codes, settings identifiers): they cross the
wire as such and compare as such, and the connection (:mod:`.server`) reads them by the million.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ACK",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONTINUATION",
    "DATA",
    "END_HEADERS",
    "END_STREAM",
    "ENHANCE_YOUR_CALM",
    "FLOW_CONTROL_ERROR",
    "FRAME_SIZE_ERROR",
    "GOAWAY",
    "HEADERS",
    "INTERNAL_ERROR",
    "MAX_WINDOW",
    "NO_ERROR",
    "PADDED",
    "PING",
    "PREFACE",
    "PRIORITY",
    "PRIORITY_FLAG",
    "PROTOCOL_ERROR",
    "PUSH_PROMISE",
    "REFUSED_STREAM",
    "RST_STREAM",
    "SETTINGS",
    "SETTINGS_ENABLE_PUSH",
    "SETTINGS_HEADER_TABLE_SIZE",
    "SETTINGS_INITIAL_WINDOW_SIZE",
    "SETTINGS_MAX_CONCURRENT_STREAMS",
    "SETTINGS_MAX_FRAME_SIZE",
    "SETTINGS_MAX_HEADER_LIST_SIZE",
    "STREAM_CLOSED",
    "WINDOW_UPDATE",
    "frame",
    "goaway",
    "goaway_fields",
    "header_frames",
    "ping",
    "rst_stream",
    "settings",
    "settings_fields",
    "u31",
    "unpadded",
    "window_update",
]

PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""The client connection preface (RFC 9113 §3.4)."""

# frame types (RFC 9113 §6)
DATA: Final = 0x0
HEADERS: Final = 0x1
PRIORITY: Final = 0x2
RST_STREAM: Final = 0x3
SETTINGS: Final = 0x4
PUSH_PROMISE: Final = 0x5
PING: Final = 0x6
GOAWAY: Final = 0x7
WINDOW_UPDATE: Final = 0x8
CONTINUATION: Final = 0x9

# flags
END_STREAM: Final = 0x1
ACK: Final = 0x1
END_HEADERS: Final = 0x4
PADDED: Final = 0x8
PRIORITY_FLAG: Final = 0x20

# error codes (RFC 9113 §7)
NO_ERROR: Final = 0x0
PROTOCOL_ERROR: Final = 0x1
INTERNAL_ERROR: Final = 0x2
FLOW_CONTROL_ERROR: Final = 0x3
STREAM_CLOSED: Final = 0x5
FRAME_SIZE_ERROR: Final = 0x6
REFUSED_STREAM: Final = 0x7
CANCEL: Final = 0x8
COMPRESSION_ERROR: Final = 0x9
ENHANCE_YOUR_CALM: Final = 0xB

# settings (RFC 9113 §6.5.2)
SETTINGS_HEADER_TABLE_SIZE: Final = 0x1
SETTINGS_ENABLE_PUSH: Final = 0x2
SETTINGS_MAX_CONCURRENT_STREAMS: Final = 0x3
SETTINGS_INITIAL_WINDOW_SIZE: Final = 0x4
SETTINGS_MAX_FRAME_SIZE: Final = 0x5
SETTINGS_MAX_HEADER_LIST_SIZE: Final = 0x6

MAX_WINDOW: Final = 2**31 - 1
"""The largest flow-control window, and the largest stream identifier (RFC 9113 §6.9.1)."""


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    """One frame: the header (RFC 9113 §4.1) then ``payload``."""
    size = len(payload)
    header = bytes(
        (
            size >> 16,
            (size >> 8) & 0xFF,
            size & 0xFF,
            kind,
            flags,
            stream_id >> 24,
            (stream_id >> 16) & 0xFF,
            (stream_id >> 8) & 0xFF,
            stream_id & 0xFF,
        )
    )  # byte by byte: compiled, no method call (to_bytes) per frame
    return header + payload if payload else header


def u31(data: bytes, at: int) -> int:
    """The 31-bit number at ``at`` (the reserved bit dropped, RFC 9113 §4.1)."""
    return (data[at] & 0x7F) << 24 | data[at + 1] << 16 | data[at + 2] << 8 | data[at + 3]


def unpadded(payload: bytes, flags: int) -> bytes | None:
    """The payload of a DATA or HEADERS frame without its padding (RFC 9113 §6.1); None when
    the padding is as long as the payload or longer, which is a ``PROTOCOL_ERROR``."""
    if not flags & PADDED:
        return payload
    if not payload:
        return None
    pad = payload[0]
    if pad >= len(payload):
        return None
    return payload[1 : len(payload) - pad]


def header_frames(stream_id: int, block: bytes, *, end_stream: bool, max_size: int) -> bytes:
    """A header block as HEADERS then as many CONTINUATION frames as ``max_size`` needs
    (RFC 9113 §6.2, §6.10)."""
    first = END_STREAM if end_stream else 0
    if len(block) <= max_size:
        return frame(HEADERS, first | END_HEADERS, stream_id, block)
    out = [frame(HEADERS, first, stream_id, block[:max_size])]
    at = max_size
    while at < len(block):
        piece = block[at : at + max_size]
        at += max_size
        out.append(frame(CONTINUATION, END_HEADERS if at >= len(block) else 0, stream_id, piece))
    return b"".join(out)


def settings(values: list[tuple[int, int]]) -> bytes:
    """A SETTINGS frame (RFC 9113 §6.5)."""
    payload = b"".join([key.to_bytes(2, "big") + value.to_bytes(4, "big") for key, value in values])
    return frame(SETTINGS, 0, 0, payload)


def settings_fields(payload: bytes) -> list[tuple[int, int]]:
    """The identifier and value of each setting in a SETTINGS payload whose length is a
    multiple of six (the caller checks it, RFC 9113 §6.5)."""
    return [
        (
            int.from_bytes(payload[at : at + 2], "big"),
            int.from_bytes(payload[at + 2 : at + 6], "big"),
        )
        for at in range(0, len(payload), 6)
    ]


def ping(opaque: bytes, *, ack: bool) -> bytes:
    """A PING frame, or its acknowledgement (RFC 9113 §6.7)."""
    return frame(PING, ACK if ack else 0, 0, opaque)


def rst_stream(stream_id: int, code: int) -> bytes:
    """A RST_STREAM frame (RFC 9113 §6.4)."""
    return frame(RST_STREAM, 0, stream_id, code.to_bytes(4, "big"))


def goaway(last_stream_id: int, code: int, debug: bytes = b"") -> bytes:
    """A GOAWAY frame (RFC 9113 §6.8)."""
    return frame(GOAWAY, 0, 0, last_stream_id.to_bytes(4, "big") + code.to_bytes(4, "big") + debug)


def goaway_fields(payload: bytes) -> tuple[int, int]:
    """The last stream identifier and the error code of a GOAWAY payload of at least eight
    bytes (the caller checks it)."""
    return u31(payload, 0), int.from_bytes(payload[4:8], "big")


def window_update(stream_id: int, increment: int) -> bytes:
    """A WINDOW_UPDATE frame (RFC 9113 §6.9)."""
    return frame(WINDOW_UPDATE, 0, stream_id, increment.to_bytes(4, "big"))
