"""The external-authentication sub-request (ingress-nginx's ``auth-url``): sent before a
request is forwarded, when its decision carries an
:class:`~coxswain.compile.snapshot.ExternalAuth`. What is sent and what the answer decides
is pure (``route.external_auth``); this module only exchanges the bytes.

Rules:
- **Client.** The sub-request goes out through the proxy's upstream client
  (:func:`.pool.connect`, the codec's response parser): to the auth URL's host and port, over
  TLS for an ``https`` URL (verified against the system's CAs, its host as SNI and name,
  :mod:`.upstream_tls`), with ``Connection: close`` as ingress-nginx's default
  (``auth-keepalive`` 0).
- **Bounded.** Connecting takes at most the path's connect timeout (``proxy-connect-timeout``,
  else the proxy's); the whole exchange at most the path's read timeout
  (``proxy-read-timeout``, else the proxy's). Of the answer only the head is used; at most
  ``BODY_LIMIT`` bytes of its body are read, then the connection is closed.
- **Failure.** No connection, a broken or malformed answer, or running out of time is "no
  answer": the request is answered 500, as nginx answers an ``auth_request`` that failed.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Final

import trio

from coxswain.compile.snapshot import Endpoint
from coxswain.http1 import ResponseHead, ResponseParser, frame_request_head
from coxswain.route.external_auth import auth_outcome, auth_request, cache_key, cache_seconds
from coxswain.route.ingress_request import kept_fields
from coxswain.shell.dataplane.pool import ConnectFailed, connect
from coxswain.shell.dataplane.served import Routed
from coxswain.shell.dataplane.wire import EventReader

if TYPE_CHECKING:
    from coxswain.compile.snapshot import ExternalAuth
    from coxswain.http1 import RequestHead
    from coxswain.shell.dataplane.served import Served
    from coxswain.shell.dataplane.upstream import Forwarder

__all__ = ["CACHE_SIZE", "authorized"]

CACHE_SIZE: Final = 4096


async def authorized(
    forwarder: Forwarder,
    served: Served,
    routed: Routed,
    head: RequestHead,
    *,
    scheme: bytes,
    client: str | None,
) -> tuple[Routed, RequestHead]:
    """The routing of a request whose decision asks for external authentication, and its head
    as forwarded: the decision answered by the proxy when the auth service refuses, or
    forwarded with the auth service's fields."""
    decision = routed.decision
    auth = decision.external_auth
    assert auth is not None
    host_header = head.host or b""
    request = auth_request(
        auth,
        method=head.method,
        target=head.target,
        host_header=host_header,
        scheme=scheme,
        client=None if client is None else client.encode("latin-1"),
        headers=head.headers,
    )
    connect_within, read_within = forwarder.timeouts.connect, forwarder.timeouts.read
    if decision.timeouts is not None:
        connect_within = decision.timeouts[0] or connect_within
        read_within = decision.timeouts[1] or read_within
    key = None
    if auth.cache_key is not None:
        key = _cache_key(auth, head, scheme=scheme, client=client)
    remembered = served.auth_answers.get(key) if key is not None else None
    if remembered is not None and remembered[0] > trio.current_time():
        _, status, fields = remembered
    else:
        status, fields = None, []
        try:
            framed = frame_request_head(
                method=request.method,
                target=request.target,
                headers=[*request.fields, (b"connection", b"close")],
            )
        except ValueError:  # a field the wire cannot carry: no sub-request, so no answer
            framed = b""
        if framed:
            with trio.move_on_after(read_within):
                status, fields = await _exchange(
                    forwarder, served, auth, framed, request.method, connect_within
                )
        lifetime = cache_seconds(auth, status)
        if key is not None and lifetime > 0:
            answers = served.auth_answers
            answers.pop(key, None)
            if len(answers) >= CACHE_SIZE:
                del answers[next(iter(answers))]  # the oldest
            answers[key] = (trio.current_time() + lifetime, status, fields)
    outcome = auth_outcome(
        auth,
        status,
        fields,
        scheme=scheme.decode("latin-1"),
        host_header=host_header.decode("latin-1"),
        request_uri=head.target.decode("latin-1"),
    )
    if outcome.status is not None:
        answered = dataclasses.replace(
            decision,
            status=outcome.status,
            reason=f"{decision.reason}; {outcome.reason}",
            redirect=outcome.location,
            response_fields=kept_fields(decision) + outcome.fields,
            checks=None,
            external_auth=None,
        )
        return Routed(answered), head
    if outcome.removed:
        kept = [(n, v) for n, v in head.headers if n.lower() not in outcome.removed]
        head = dataclasses.replace(head, headers=(*kept, *outcome.request_fields))
    forwarded = Routed(
        dataclasses.replace(
            decision,
            response_fields=decision.response_fields + outcome.fields,
            external_auth=None,
        )
    )
    forwarded.place = routed  # keeps the request's place under limit-connections
    return forwarded, head


async def _exchange(
    forwarder: Forwarder,
    served: Served,
    auth: ExternalAuth,
    request: bytes,
    method: bytes,
    connect_within: float,
) -> tuple[int | None, list[tuple[bytes, bytes]]]:
    """The auth response's status and fields; (None, []) when there was none."""
    try:
        tls = served.auth_origination(auth)
        upstream, _, _ = await connect(
            (Endpoint(auth.host, auth.port),), None, within=connect_within, tls=tls
        )
    except (ConnectFailed, OSError):
        return None, []
    try:
        await upstream.send_all(request)
        parser = ResponseParser(forwarder.codec)
        parser.expect_response(method)
        reader = EventReader(upstream, parser)
        event = await reader.next(math.inf)
        while type(event) is ResponseHead and event.status < 200:  # interim: dropped
            await trio.lowlevel.checkpoint()  # a flood of them must not hold the loop
            event = await reader.next(math.inf)
        if type(event) is not ResponseHead:
            return None, []
        return event.status, list(event.headers)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return None, []
    finally:
        await trio.aclose_forcefully(upstream)


def _cache_key(
    auth: ExternalAuth, head: RequestHead, *, scheme: bytes, client: str | None
) -> tuple[int, str]:
    """Where an auth response for this request is remembered: the auth setting (the snapshot
    keeps it alive, so its id holds) and ``auth-cache-key`` expanded."""
    expanded = cache_key(
        auth,
        client=client,
        scheme=scheme.decode("latin-1"),
        host_header=(head.host or b"").decode("latin-1"),
        target=head.target.decode("latin-1"),
        headers=head.headers,
    )
    return id(auth), expanded
