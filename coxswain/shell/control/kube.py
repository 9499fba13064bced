"""The Kubernetes API from trio: the official client behind one bridge (docs/architecture.md).

This is the only module that touches the ``kubernetes`` package, and, with
:mod:`.discovery`'s asyncio bridge, the only one that uses threads:

- **Requests** are built by the official client (``ApiClient.param_serialize``: the server
  address, TLS, kubeconfig or in-cluster credentials, token refresh) and sent by it
  (``call_api``), in trio worker threads bounded by this bridge's own limiter, so a slow API
  server cannot take every thread trio has.
- **Bodies stay raw JSON.** The compiler decodes raw objects (``compile.model.decode``); the
  client's models would be built only to be thrown away, and they drop fields they do not
  know (a newer CRD's). The JSON is decoded here, in a worker thread, within a nesting
  bound (:mod:`.json_bodies`): a list gives the items it could decode and those it refused, a
  watch hands on a refused event for the informer to skip, and an answer that cannot be read
  is :class:`Undecodable`, retried like one that never came. An answer is decoded in its
  request's thread; a list page in a thread of its own, one page at a time
  (:data:`LIST_DECODERS`): the decode holds the interpreter lock an item at a time, and the
  event loop's thread, waiting for the lock when its switch interval is up, then competes with
  one decoding thread for it instead of eight (docs/benchmarks.md, "Controller").
- **A watch** holds one thread that reads the chunked response line by line and hands each
  event to trio. Cancelling the watch shuts the response's socket down, which ends the
  thread's read at once; the watch waits for the thread before it returns, so no thread
  outlives its watch. Every watch also carries ``timeoutSeconds``, so the server ends it too.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

import trio
import urllib3

from coxswain.shell.control.json_bodies import (
    Listing,
    Refused,
    decode_answer,
    decode_event,
    decode_list,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Sequence

    from kubernetes.client import ApiClient

__all__ = [
    "APPLY_PATCH",
    "MERGE_PATCH",
    "ApiFailure",
    "Kube",
    "Resource",
    "Undecodable",
    "Unreachable",
    "WatchEvent",
    "connect",
]

MERGE_PATCH: Final = "application/merge-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"
REQUEST_TIMEOUT: Final = 30.0
CONNECT_TIMEOUT: Final = 10.0
POOL_SIZE: Final = 32  # a connection per watch (about 20) and per concurrent request (8 + 1)
URGENT_REQUESTS: Final = 1  # the leader Lease's own request slot
WATCH_BUFFER: Final = 256
"""Watch events decoded ahead of the loop that folds them in, at most. The statuses a round
wrote come back as 11,000 events at once at 1,000 Gateways: unbounded, the reading thread
decoded them all ahead, and the full collections while they waited walked all of them
(460,000 objects, 310 ms of CPU holding the interpreter lock)."""
LIST_DECODERS: Final = 1  # list pages decoded at once: CPU-bound under one lock, no gain in more
_ERROR_SHOWN: Final = 200  # bytes of an error answer that is not a Status, shown as its message
_T = TypeVar("_T")

WatchEvent = dict[str, Any] | Refused
"""A watch event as decoded, or the refusal of one (:mod:`.json_bodies`)."""


@dataclass(frozen=True, slots=True)
class Resource:
    """One API resource: where its objects live in the REST API."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``group/version``, or ``version`` alone for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_path(self) -> str:
        """``/api/v1`` or ``/apis/<group>/<version>``."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str = ""
    ) -> str:
        """The collection (all namespaces when ``namespace`` is None) or one object's path."""
        where = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        path = f"{self.group_path}{where}/{self.plural}"
        if name is not None:
            path += f"/{name}"
        if subresource:
            path += f"/{subresource}"
        return path


class ApiFailure(Exception):
    """The API server answered with an error status (its ``Status`` object, read)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


class Unreachable(Exception):
    """No usable answer: the connection failed or timed out, or (:class:`Undecodable`) what
    came cannot be read."""


class Undecodable(Unreachable):
    """A successful answer that cannot be read (not JSON, or nested past
    ``json_bodies.MAX_BODY_DEPTH``): as useless as none, so every caller retries it as it
    retries an unreachable server, and none crashes on it."""


def connect(kubeconfig: str | None) -> Kube:
    """A client of the cluster: ``kubeconfig`` when given, else the in-cluster configuration
    (the pod's ServiceAccount token, refreshed as it rotates).

    Raises:
        kubernetes.config.ConfigException: neither works.
    """
    from kubernetes import client, config

    configuration = client.Configuration()
    # The loaders have no annotations; their contract is the keyword arguments used here.
    from_file: Callable[..., None] = config.load_kube_config
    in_cluster: Callable[..., None] = config.load_incluster_config
    if kubeconfig:
        from_file(config_file=kubeconfig, client_configuration=configuration)
    else:
        in_cluster(client_configuration=configuration)
    configuration.connection_pool_maxsize = POOL_SIZE
    return Kube(client.ApiClient(configuration))


class Kube:
    """Raw-JSON access to one API server, for trio code."""

    def __init__(self, client: ApiClient, *, max_requests: int = 8) -> None:
        self._client = client
        self._requests = trio.CapacityLimiter(max_requests)
        self._urgent = trio.CapacityLimiter(URGENT_REQUESTS)
        self._decoders = trio.CapacityLimiter(LIST_DECODERS)

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: object = None,
        content_type: str | None = None,
        read_timeout: float = REQUEST_TIMEOUT,
        urgent: bool = False,
    ) -> dict[str, Any]:
        """One request; the decoded JSON answer. ``urgent`` (the leader Lease's) takes a
        request slot of its own, so it never waits behind a round's queued writes or a resync's
        lists.

        Raises:
            ApiFailure: a status other than 2xx.
            Unreachable: no answer within ``read_timeout``, or one that cannot be read
                (:class:`Undecodable`).
        """
        headers = {"Accept": "application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        answer = await self._exchange(
            lambda: self._send(method, path, query, headers, body, read_timeout),
            decode_answer,
            self._urgent if urgent else self._requests,
        )
        if isinstance(answer, Refused):
            raise Undecodable(f"{method} {path}: the answer {answer.why}")
        return answer

    async def list(self, path: str, *, query: Sequence[tuple[str, str]] = ()) -> Listing:
        """A list: the items decoded, the items refused (:mod:`.json_bodies`), and its
        resourceVersion.

        Raises:
            ApiFailure: a status other than 2xx.
            Unreachable: no answer within the request timeout, or one that cannot be read as
                a list at all (:class:`Undecodable`).
        """
        headers = {"Accept": "application/json"}
        data = await self._exchange(
            lambda: self._send("GET", path, query, headers, None, REQUEST_TIMEOUT),
            _raw,
            self._requests,
        )
        answer = await trio.to_thread.run_sync(decode_list, data, limiter=self._decoders)
        if isinstance(answer, Refused):
            raise Undecodable(f"GET {path}: the list {answer.why}")
        return answer

    async def _exchange(
        self,
        request: Callable[[], urllib3.BaseHTTPResponse],
        decode: Callable[[bytes], _T],
        limiter: trio.CapacityLimiter,
    ) -> _T:
        """One ``request`` (a call of :meth:`_send`), its successful answer decoded by
        ``decode`` in the request's thread (not on the event loop's).

        Raises:
            ApiFailure: a status other than 2xx.
            Unreachable: no answer in time.
        """

        def send() -> _T | ApiFailure:
            response = request()
            try:
                data = response.read()
            finally:
                response.release_conn()
            if not 200 <= response.status < 300:
                return _failure(response.status, data)
            return decode(data)

        answer = await trio.to_thread.run_sync(send, limiter=limiter)
        if isinstance(answer, ApiFailure):
            raise answer
        return answer

    async def watch(
        self,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        resource_version: str,
        timeout_seconds: int,
        on_event: Callable[[WatchEvent], Awaitable[bool]],
    ) -> None:
        """Hand each event of a watch from ``resource_version`` to ``on_event`` until it
        returns False, the server ends the watch, or the caller is cancelled. An event that
        cannot be decoded is handed on as its :class:`~.json_bodies.Refused`.

        Raises:
            ApiFailure: the watch was refused (410 Gone arrives as an ERROR event instead).
            Unreachable: it could not be opened or broke off.
        """
        query = [
            *query,
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        read = timeout_seconds + CONNECT_TIMEOUT
        response = await trio.to_thread.run_sync(
            lambda: self._send("GET", path, query, {"Accept": "application/json"}, None, read),
            limiter=self._requests,
        )
        if not 200 <= response.status < 300:
            data = response.read()
            response.release_conn()
            raise _failure(response.status, data)
        send, receive = trio.open_memory_channel[WatchEvent](WATCH_BUFFER)
        # ``receive`` is closed before the nursery waits: a reader waiting for room is let go
        async with trio.open_nursery() as nursery, receive:
            nursery.start_soon(self._pump, response, send)
            try:
                async for event in receive:
                    if not await on_event(event):
                        break
            finally:
                # ends the thread's read now; RuntimeError or ValueError: the thread already
                # finished and released the connection (urllib3 then has no socket to shut)
                with contextlib.suppress(OSError, RuntimeError, ValueError):
                    response.shutdown()

    async def _pump(
        self, response: urllib3.BaseHTTPResponse, send: trio.MemorySendChannel[WatchEvent]
    ) -> None:
        """Read and decode the watch's lines in a thread (its own: a watch holds it for
        minutes), waiting while :data:`WATCH_BUFFER` events wait for the loop."""
        token = trio.lowlevel.current_trio_token()

        def read_lines() -> None:
            try:
                for line in _lines(response):
                    event = decode_event(line)
                    try:
                        trio.from_thread.run_sync(send.send_nowait, event, trio_token=token)
                    except trio.WouldBlock:
                        trio.from_thread.run(send.send, event, trio_token=token)
            except (urllib3.exceptions.HTTPError, OSError, ValueError, trio.BrokenResourceError):
                pass  # shut down by the watch's end, or broken off: the informer re-lists
            finally:
                response.release_conn()

        async with send:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(read_lines, limiter=trio.CapacityLimiter(1))

    def _send(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: dict[str, str],
        body: object,
        timeout: float,
    ) -> urllib3.BaseHTTPResponse:
        method, url, headers, body, _ = self._client.param_serialize(
            method,
            path,
            query_params=list(query),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            answer = self._client.call_api(
                method, url, headers, body, _request_timeout=(CONNECT_TIMEOUT, timeout)
            )
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise Unreachable(f"{method} {path}: {err}") from err
        response: urllib3.BaseHTTPResponse = answer.response
        return response


def _raw(data: bytes) -> bytes:
    """A list page's body, left for :data:`LIST_DECODERS` to decode."""
    return data


def _lines(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """The newline-separated JSON documents of a watch stream."""
    pending = b""
    for chunk in response.stream(65536, decode_content=True):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from (line for line in complete if line.strip())
    if pending.strip():
        yield pending


def _failure(status: int, data: bytes) -> ApiFailure:
    """The failure an error answer reports: its ``Status``, or its first bytes (a proxy's error
    page, say) as the message."""
    answer = decode_answer(data)
    if isinstance(answer, Refused):
        answer = {"message": data[:_ERROR_SHOWN].decode(errors="replace")}
    return ApiFailure(status, str(answer.get("reason") or ""), str(answer.get("message") or ""))
