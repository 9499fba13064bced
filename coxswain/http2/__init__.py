"""HTTP/2 for the proxy's clients and backends, the pure parts (RFC 9113).

The ``h2`` library keeps the protocol's state (frames, HPACK, flow control, stream states);
the proxy's loops around it are :mod:`coxswain.shell.dataplane.h2_connection` (clients) and
:mod:`coxswain.shell.dataplane.h2_upstream` (backends). Here:

- :mod:`.fields`: one field checked, whichever peer sent it;
- :mod:`.request`: a client stream's header list checked and turned into the
  :class:`~coxswain.http1.RequestHead` that routing and forwarding take, as for HTTP/1.1;
- :mod:`.backend`: a request's header list towards an HTTP/2 backend, its response head
  checked and turned into the :class:`~coxswain.http1.ResponseHead` the relay takes;
- :mod:`.response`: the header lists of relayed responses and of the proxy's own answers,
  gRPC's Trailers-Only form among them;
- :mod:`.budget`: what a client may make the proxy do for nothing.
"""
