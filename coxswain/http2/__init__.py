"""HTTP/2 for the proxy's clients and backends, the pure parts (RFC 9113).

Towards clients the protocol is the proxy's own, sans I/O, compiled with mypyc like the
HTTP/1.1 codec (setup.py): :mod:`.server` (the connection's states, flow control and bounds),
:mod:`.frames`, :mod:`.hpack` with :mod:`.hpack_tables`, the :mod:`.events` it yields,
and :mod:`.request` with :mod:`.fields`, which check every request's fields; its loop is
:mod:`coxswain.shell.dataplane.h2_connection`. Towards backends the proxy's own client side,
:mod:`.client`, on :mod:`.connection` (what both ends do alike) and the same frames and HPACK,
under :mod:`coxswain.shell.dataplane.h2_upstream`. Here also:

- :mod:`.fields`: one field checked, whichever peer sent it;
- :mod:`.request`: a client stream's header list checked and turned into the
  :class:`~coxswain.http1.RequestHead` that routing and forwarding take, as for HTTP/1.1;
- :mod:`.backend`: a request's header list towards an HTTP/2 backend, its response head
  checked and turned into the :class:`~coxswain.http1.ResponseHead` the relay takes;
- :mod:`.response`: the header lists of relayed responses;
- :mod:`.grpc_answer`: the proxy's own gRPC answers, in Trailers-Only form, and the trailers
  of a call it cuts;
- :mod:`.budget`: what a client may make the proxy do for nothing.
"""

from __future__ import annotations

from typing import Final

from coxswain.http2 import (
    backend,
    client,
    connection,
    events,
    fields,
    frames,
    hpack,
    hpack_tables,
    request,
    response,
    server,
)

__all__ = ["NATIVE_MODULES"]

# setup.py's COMPILED of this package, as modules (tests/unit/test_build.py checks the lists)
NATIVE_MODULES: Final = (
    events, frames, hpack_tables, hpack, server, fields, response, request, connection, client,
    backend,
)  # fmt: skip
