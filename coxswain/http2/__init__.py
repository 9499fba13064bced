"""HTTP/2 for the proxy's clients, the pure parts (RFC 9113).

The ``h2`` library keeps the protocol's state (frames, HPACK, flow control, stream states);
the proxy's loop around it is :mod:`coxswain.shell.dataplane.h2_connection`. Here:

- :mod:`.request`: a stream's header list checked and turned into the
  :class:`~coxswain.http1.RequestHead` that routing and forwarding take, as for HTTP/1.1;
- :mod:`.response`: the header lists of relayed responses and of the proxy's own answers.
"""
