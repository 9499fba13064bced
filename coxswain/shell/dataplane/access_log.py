"""The proxy's access log: one JSON object a line per request, on stderr.

Lines are collected and written in batches, when ``LIMIT`` bytes are waiting and at least every
``INTERVAL`` seconds (:meth:`AccessLog.run`), as nginx's ``access_log ... buffer= flush=`` does:
a write and Python's logging machinery per request were a tenth of a small proxied request's
profile (docs/benchmarks.md, "Measurements behind the design"). The price is that the last
``INTERVAL`` of lines can be lost if the process is killed; :meth:`AccessLog.flush` runs when
the proxy stops.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _quote  # the C string encoder of json
from typing import TYPE_CHECKING, Final

import trio

if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["AccessLog"]

LIMIT: Final = 64 * 1024
INTERVAL: Final = 0.2

_encode = json.JSONEncoder(separators=(",", ":")).encode


def _text(value: str | None) -> str:
    return "null" if value is None else _quote(value)


class AccessLog:
    """Batched JSON lines to ``stream``; with no stream, requests are not logged."""

    __slots__ = ("_lines", "_size", "stream")

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self._lines: list[str] = []
        self._size = 0

    def write(self, fields: dict[str, object]) -> None:
        """Log one request."""
        if self.stream is not None:
            self._add(_encode(fields))

    def request(
        self,
        *,
        method: bytes,
        host: bytes | None,
        path: bytes,
        route: str | None,
        client: str | None,
        reason: str | None,
        status: int,
        protocol: str,
        grpc_status: str,
        upstream: str | None,
        duration_ms: float,
    ) -> None:
        """Log one proxied request: the object :meth:`write` makes of these fields (``reason``
        and ``grpc_status`` only when given), put together directly: about half the time the
        dictionary and the generic encoder take (``bench/proxy.py parts``). ``protocol`` is
        the client's, ``http/1.1`` or ``h2``; ``grpc_status`` a gRPC call's outcome (the code
        the client got, :func:`coxswain.route.grpc_status.status_label`)."""
        if self.stream is None:
            return
        latin1 = "latin-1"
        said = "" if reason is None else f'"reason":{_quote(reason)},'
        grpc = f'"grpc_status":{_quote(grpc_status)},' if grpc_status else ""
        self._add(
            f'{{"method":{_quote(method.decode(latin1))},'
            f'"host":{"null" if host is None else _quote(host.decode(latin1))},'
            f'"path":{_quote(path.decode(latin1))},"route":{_text(route)},'
            f'"client":{_text(client)},{said}'
            f'"status":{status:d},"protocol":{_quote(protocol)},'
            f"{grpc}"
            f'"upstream":{_text(upstream)},"duration_ms":{duration_ms!r}}}'
        )

    def _add(self, line: str) -> None:
        self._lines.append(line)
        self._size += len(line) + 1
        if self._size >= LIMIT:
            self.flush()

    def flush(self) -> None:
        """Write what is waiting."""
        if not self._lines or self.stream is None:
            return
        lines, self._lines, self._size = self._lines, [], 0
        try:
            self.stream.write("\n".join(lines) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: the proxy serves on, unlogged
            pass

    async def run(self) -> None:
        """Flush every ``INTERVAL`` seconds until cancelled."""
        try:
            while True:
                await trio.sleep(INTERVAL)
                self.flush()
        finally:
            self.flush()
