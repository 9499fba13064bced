"""The HTTP front of the emulator: real Kubernetes REST over HTTP/1.1 on 127.0.0.1.

`ApiServer` serves a `Store` to any client, in particular the official `kubernetes` Python
client (typed APIs, `watch.Watch`, `DynamicClient`), and gives tests the levers a real cluster
does not: fault injection, outages, dropping watches, compacting history, a request log, and
direct store access without HTTP.

Each connection gets a thread (`ThreadingHTTPServer`); a watch holds its thread and streams
chunked JSON lines, one ``{"type": ..., "object": ...}`` per line. There is no authentication
and no admission; ``dryRun`` is refused with 400 rather than silently persisted.
"""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import socketserver
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, Self
from urllib.parse import parse_qs, urlsplit

import kubernetes.client
import yaml

from . import patch, resources
from .deep_values import dumps
from .errors import ApiError, expired
from .pages import continue_token, continued, page_limit
from .selectors import Predicate, field_selector, label_selector
from .store import Bookmark, Event, Store, Watcher, parse_version, served_as

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .resources import ResourceType

Obj = dict[str, Any]
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader parses big CRDs 10x faster
VERSION_INFO = {
    "major": "1",
    "minor": "34",
    "gitVersion": "v1.34.0-coxswain-emulator",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-08-27T00:00:00Z",
    "goVersion": "go1.24.6",
    "compiler": "gc",
    "platform": "linux/amd64",
}


class RequestRecord(NamedTuple):
    """One request as received, for assertions such as "no status write churn"."""

    method: str
    path: str
    query: str
    content_type: str | None


@dataclass
class Fault:
    """Fail the next `remaining` requests with `method` (any if None) under `path_prefix`."""

    status: int
    method: str | None
    path_prefix: str
    remaining: int
    message: str

    def matches(self, method: str, path: str) -> bool:
        return self.method in (None, method) and path.startswith(self.path_prefix)


@dataclass(frozen=True)
class Target:
    """What a resource URL names: a collection, an object, or an object's subresource."""

    rt: ResourceType
    version: str
    namespace: str | None
    name: str | None
    sub: str


def _is_true(value: str | None) -> bool:
    return value in ("true", "1")


class ApiServer:
    """A Kubernetes API server emulator for tests; a context manager that starts and stops it.

    `history_limit` is how many events the watch history keeps (older starting points get 410
    Expired); `bookmark_interval` is how often watches that allow bookmarks get one.
    """

    def __init__(self, history_limit: int = 10_000, bookmark_interval: float = 1.0) -> None:
        self.store = Store(history_limit)
        self.bookmark_interval = bookmark_interval
        self.requests: list[RequestRecord] = []
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._port = 0
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Listen (on the same port as before after a `stop`, so clients can reconnect)."""
        if self._httpd is not None:
            return
        self._httpd = _HttpServer(("127.0.0.1", self._port), self)
        self._port = self._httpd.server_address[1]
        self.store.open_watches()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and cut every connection, watches included; the store is kept."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        httpd.shutdown()
        thread.join()
        self.store.close_watches()
        httpd.cut_connections()
        httpd.server_close()
        self._httpd = self._thread = None

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """The server is unreachable inside the block and back on the same port after it."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def kubeconfig(self, path: str | Path) -> Path:
        """Write a kubeconfig for this server (context ``emulator``, namespace ``default``)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
            "users": [{"name": "emulator", "user": {"token": "emulator"}}],
            "contexts": [
                {
                    "name": "emulator",
                    "context": {"cluster": "emulator", "user": "emulator", "namespace": "default"},
                }
            ],
            "current-context": "emulator",
        }
        target = Path(path)
        target.write_text(yaml.safe_dump(config))
        return target

    def client(self) -> kubernetes.client.ApiClient:
        """A client configured for this server; close it (it is a context manager)."""
        return kubernetes.client.ApiClient(kubernetes.client.Configuration(host=self.url))

    # -- levers for tests -------------------------------------------------------------------

    def fail(
        self,
        status: int,
        method: str | None = None,
        path_prefix: str = "/",
        times: int = 1,
        message: str = "injected fault",
    ) -> None:
        """Answer the next `times` matching requests with `status` and a `Status` body."""
        with self._lock:
            self._faults.append(Fault(status, method, path_prefix, times, message))

    def _take_fault(self, method: str, path: str) -> ApiError | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                    return ApiError(fault.status, fault.message)
        return None

    def _record(self, request: RequestRecord) -> None:
        with self._lock:
            self.requests.append(request)

    def bookmark(self) -> None:
        """Send a BOOKMARK now on every watch that allows bookmarks."""
        self.store.bookmark()

    def drop_watches(self) -> None:
        """End every open watch stream cleanly, so clients have to re-watch."""
        self.store.drop_watches()

    def compact(self) -> None:
        """Drop the watch history: watching from any older resourceVersion gets 410 Expired."""
        self.store.compact()

    def expire(self) -> None:
        """Make every resourceVersion handed out so far too old (``Store.expire``) and end every
        watch: each client watches again, gets 410 Expired, and lists again."""
        self.store.expire()

    def install_crds(self, *paths: str | Path) -> list[str]:
        """Create or update the CRDs in YAML files (or directories of them); other kinds skipped.

        Returns the names of the installed CRDs.
        """
        rt = self.store.kind("CustomResourceDefinition")
        files = [
            f for p in map(Path, paths) for f in (sorted(p.glob("*.yaml")) if p.is_dir() else [p])
        ]
        names = []
        for file in files:
            for doc in yaml.load_all(file.read_text(), Loader=_LOADER):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    name = doc["metadata"]["name"]
                    self.store.apply(rt, "", name, doc, "", "install_crds", force=True)
                    names.append(name)
        return names

    # -- direct store access (no HTTP) ------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self.store.resource_version

    def get(
        self, kind: str, name: str, namespace: str | None = None, api_version: str | None = None
    ) -> Obj | None:
        """The stored object, or None; `namespace` defaults to ``default`` for namespaced kinds."""
        rt = self.store.kind(kind, api_version)
        try:
            return self.store.get(rt, self._namespace(rt, namespace), name)
        except ApiError:
            return None

    def objects(
        self, kind: str, namespace: str | None = None, api_version: str | None = None
    ) -> list[Obj]:
        """Every stored object of `kind` (in `namespace`, or all namespaces)."""
        return self.store.list_objects(
            self.store.kind(kind, api_version), namespace, lambda _: True
        )[0]

    def put_object(self, obj: Obj) -> Obj:
        """Create or replace `obj`, status included, as another client would (watchers see it)."""
        return self.store.put(obj)

    def delete_object(self, kind: str, name: str, namespace: str | None = None) -> Obj:
        """Delete as a DELETE request would (finalizers and garbage collection apply)."""
        rt = self.store.kind(kind)
        return self.store.delete(rt, self._namespace(rt, namespace), name)

    @staticmethod
    def _namespace(rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "default") if rt.namespaced else ""


class _HttpServer(ThreadingHTTPServer):
    """Joins its handler threads on close and can cut open connections (for outages)."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], api: ApiServer) -> None:
        self.api = api
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        self.cut = False
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Bind without `HTTPServer`'s reverse DNS lookup of the address."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def cut_connections(self) -> None:
        """Shut down every connection, including those whose handler has yet to start."""
        with self.connections_lock:
            self.cut = True
            for connection in self.connections:
                _shutdown(connection)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connections cut by an outage or closed by clients are expected, not errors."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """One connection: parses requests, routes them to the store, writes JSON responses."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HttpServer

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)
            if self.server.cut:
                _shutdown(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the request log is `ApiServer.requests`."""

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    # -- request plumbing -------------------------------------------------------------------

    def _handle(self) -> None:
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        content_type = self.headers.get("Content-Type")
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        api = self.server.api
        api._record(RequestRecord(self.command, path, url.query, content_type))
        try:
            fault = api._take_fault(self.command, path)
            if fault is not None:
                raise fault
            if "dryRun" in query:
                raise ApiError(400, "the emulator does not support dryRun")
            self._dispatch(path, query, (content_type or "").split(";")[0].strip(), raw)
        except ApiError as error:
            self._send(error.code, error.status())

    def _send(self, code: int, body: Obj) -> None:
        data = dumps(body)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self, path: str, query: dict[str, str], content_type: str, raw: bytes) -> None:
        store = self.server.api.store
        parts = path.strip("/").split("/") if path != "/" else []
        discovery = self._discovery(parts, store.types())
        if discovery is not None:
            self._send(200, discovery)
            return
        target = _target(parts, store)
        if target.name is None:
            self._collection(target, query, raw)
        else:
            self._object(target, query, content_type, raw)

    def _discovery(self, parts: list[str], types: list[ResourceType]) -> Obj | None:
        """The discovery document at `parts`, None if it is not a discovery path, 404 if gone."""
        if parts == ["version"]:
            return VERSION_INFO
        if parts == ["api"]:
            return resources.api_versions(f"127.0.0.1:{self.server.server_port}")
        if parts == ["apis"]:
            return resources.api_group_list(types)
        if len(parts) == 2 and parts[0] == "apis":
            return resources.api_group(types, parts[1]) or _missing()
        if parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis"):
            group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
            return resources.api_resource_list(types, group, version) or _missing()
        return None

    # -- collections: list, watch, create ---------------------------------------------------

    def _collection(self, target: Target, query: dict[str, str], raw: bytes) -> None:
        store, rt = self.server.api.store, target.rt
        if self.command == "POST":
            if rt.namespaced and target.namespace is None:
                raise ApiError(405, "a namespaced object is created under its namespace")
            manager = self._manager(query)
            created = store.create(rt, target.namespace or "", _object_body(raw), manager)
            self._send(201, served_as(created, rt, target.version))
            return
        if self.command != "GET":
            raise ApiError(405, f"{self.command} is not supported on a collection")
        labels = label_selector(query.get("labelSelector"))
        fields = field_selector(query.get("fieldSelector"))

        def matches(obj: Obj) -> bool:
            return labels(obj) and fields(obj)

        if _is_true(query.get("watch")):
            self._watch(target, query, matches)
            return
        self._check_list_version(query)
        meta: Obj = {}
        if limit := page_limit(query.get("limit")):
            rv, after = continued(query.get("continue"))
            items, now, more = store.list_page(rt, target.namespace, matches, after, limit)
            rv = rv or now
            if more is not None:
                meta["continue"] = continue_token(rv, more)
        else:
            items, rv = store.list_objects(rt, target.namespace, matches)
        if not rt.custom:
            items = [{k: v for k, v in i.items() if k not in ("apiVersion", "kind")} for i in items]
        else:
            items = [served_as(i, rt, target.version) for i in items]
        self._send(
            200,
            {
                "kind": f"{rt.kind}List",
                "apiVersion": rt.api_version(target.version),
                "metadata": {"resourceVersion": str(rv), **meta},
                "items": items,
            },
        )

    def _check_list_version(self, query: dict[str, str]) -> None:
        """``resourceVersionMatch=Exact`` can only be served at the latest resourceVersion.

        A compacted version is 410 Expired, as on the real server; a retained but older one
        would need a historic list, which the emulator does not keep, so it fails loudly.
        """
        wanted, store = query.get("resourceVersion", ""), self.server.api.store
        if query.get("resourceVersionMatch") != "Exact" or wanted == str(store.resource_version):
            return
        if parse_version(wanted) < store.oldest:
            raise expired(int(wanted), store.oldest)
        raise ApiError(500, "the emulator serves lists at the latest resourceVersion only")

    def _manager(self, query: dict[str, str]) -> str:
        """``fieldManager``, else the User-Agent's product name as the real server does."""
        agent = self.headers.get("User-Agent") or "unknown"
        return query.get("fieldManager") or agent.split("/")[0]

    # -- objects: get, update, patch, delete ------------------------------------------------

    def _object(self, target: Target, query: dict[str, str], content_type: str, raw: bytes) -> None:
        store, rt = self.server.api.store, target.rt
        namespace, name, sub = target.namespace or "", target.name or "", target.sub
        if self.command == "GET":
            result = store.get(rt, namespace, name)
        elif self.command == "PUT":
            result = store.update(rt, namespace, name, _object_body(raw), sub, self._manager(query))
        elif self.command == "PATCH":
            result = self._patch(target, query, content_type, raw)
        elif self.command == "DELETE" and not sub:
            options = _object_body(raw) if raw else {}
            policy = query.get("propagationPolicy") or options.get("propagationPolicy")
            orphan = policy == "Orphan"
            result = store.delete(rt, namespace, name, orphan, options.get("preconditions"))
        else:
            raise ApiError(405, f"{self.command} is not supported here")
        self._send(200, served_as(result, rt, target.version))

    def _patch(self, target: Target, query: dict[str, str], content_type: str, raw: bytes) -> Obj:
        store, rt = self.server.api.store, target.rt
        namespace, name, sub = target.namespace or "", target.name or "", target.sub
        if content_type == patch.APPLY:
            manager = query.get("fieldManager")
            if not manager:
                raise ApiError(400, "PATCH /apply requires fieldManager to be set")
            config = _yaml(raw)
            return store.apply(
                rt, namespace, name, config, sub, manager, _is_true(query.get("force"))
            )
        body, change = _json(raw), patch.patcher(content_type, rt.custom)
        return store.patch(
            rt, namespace, name, lambda obj: change(obj, body), sub, self._manager(query)
        )

    # -- watch ------------------------------------------------------------------------------

    def _watch(self, target: Target, query: dict[str, str], matches: Predicate) -> None:
        """Stream events until `timeoutSeconds`, a dropped watch, or a gone client.

        A too-old resourceVersion is reported as the real server does: HTTP 200, then one
        ERROR event carrying a 410 `Status`.
        """
        store = self.server.api.store
        self._start_stream()
        try:
            replay, watcher = store.watch(target.rt, target.namespace, query.get("resourceVersion"))
        except ApiError as error:
            self._chunk({"type": "ERROR", "object": error.status()})
            self._end_stream()
            return
        try:
            for event in replay:
                self._send_event(target, event, matches)
            self._follow(target, watcher, query, matches)
            self._end_stream()
        except OSError:
            self.close_connection = True
        finally:
            store.unwatch(watcher)

    def _follow(
        self, target: Target, watcher: Watcher, query: dict[str, str], matches: Predicate
    ) -> None:
        api = self.server.api
        timeout = query.get("timeoutSeconds")
        deadline = time.monotonic() + _seconds(timeout) if timeout else None
        bookmarks = _is_true(query.get("allowWatchBookmarks"))
        next_bookmark = time.monotonic() + api.bookmark_interval
        while deadline is None or time.monotonic() < deadline:
            wakeups = [t for t in (deadline, next_bookmark if bookmarks else None) if t is not None]
            wait = max(0.0, min(wakeups) - time.monotonic()) if wakeups else None
            try:
                item = watcher.queue.get(timeout=wait)
            except queue.Empty:
                if bookmarks and time.monotonic() >= next_bookmark:
                    api.store.bookmark(watcher)
                    next_bookmark = time.monotonic() + api.bookmark_interval
                continue
            if item is None:
                return
            if isinstance(item, Bookmark):
                if bookmarks:
                    self._send_bookmark(target, item)
                continue
            self._send_event(target, item, matches)

    def _send_event(self, target: Target, event: Event, matches: Predicate) -> None:
        kind = event.visible_as(matches)
        if kind is not None:
            self._chunk({"type": kind, "object": served_as(event.obj, target.rt, target.version)})

    def _send_bookmark(self, target: Target, bookmark: Bookmark) -> None:
        marker = {
            "kind": target.rt.kind,
            "apiVersion": target.rt.api_version(target.version),
            "metadata": {"resourceVersion": str(bookmark.rv)},
        }
        self._chunk({"type": "BOOKMARK", "object": marker})

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, line: Obj) -> None:
        data = dumps(line) + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")


def _seconds(value: str) -> int:
    if not value.isdigit():
        raise ApiError(400, f"invalid timeoutSeconds {value!r}")
    return int(value)


def _shutdown(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


def _missing() -> NoReturn:
    raise ApiError(404, "the server could not find the requested resource")


def _target(parts: list[str], store: Store) -> Target:
    """Parse ``/api/v1/...`` or ``/apis/<group>/<version>/...`` into what it names."""
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) > 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        _missing()
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2:] not in (["status"], ["finalize"]):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        _missing()
    rt = store.resource(group, version, rest[0])
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else ""
    all_namespaces = namespace is None and name is None
    if (namespace is not None) != rt.namespaced and not all_namespaces:
        _missing()
    if sub and (sub != "status" or not rt.status):
        _missing()
    return Target(rt, version, namespace, name, sub)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError as exc:
        raise ApiError(400, f"the request body is not JSON: {exc}") from exc


def _object_body(raw: bytes) -> Obj:
    body = _json(raw)
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def _yaml(raw: bytes) -> Obj:
    try:
        body = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ApiError(400, f"the request body is not YAML: {exc}") from exc
    if not isinstance(body, dict):
        raise ApiError(400, "the applied configuration must be an object")
    return body
