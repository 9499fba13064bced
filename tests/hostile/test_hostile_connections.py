"""Hostile peers that hold connections: readers that never read, upstreams that never take a
request, silent tunnels, and floods of idle connections.

Each runs on real sockets against the in-process proxy (``tests.integration.proxy_harness``),
or a proxy process where the open-file limit is the point, and asserts the connection that
misbehaves is ended, with the answer the client is owed, while the proxy keeps serving others:

- a client that takes no response bytes for ``--client-send-timeout`` is disconnected, and
  its upstream connection closed (``Connection.bound_sends``);
- an upstream that takes no request bytes for ``--upstream-send-timeout`` is answered 504;
- a WebSocket tunnel with no byte either way for ``--tunnel-idle-timeout`` is closed
  (``dataplane.tunnel``);
- at ``--max-connections`` the connection idle longest is closed for a newcomer, and the
  admin port keeps answering when the open-file limit is what runs out (``dataplane.capacity``).
"""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import threading
import time
from typing import TYPE_CHECKING, Any, Self

import trio
import trio.testing

from coxswain.shell.dataplane.connection_limits import ADMIN_MAX_CONNECTIONS, ADMIN_TIMEOUT
from coxswain.shell.dataplane.tunnel import Idle
from coxswain.shell.dataplane.upstream import Timeouts
from coxswain.shell.dataplane.wire import Watchdog
from tests.integration.proxy_harness import (
    TIMEOUT,
    Running,
    echoed,
    free_port,
    ingress_path,
    proxy_command,
    read_until,
    request,
    run_proxy,
    snapshot,
    write_snapshot,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

SHORT = 0.3  # the timeout under test: long enough to be a wait, short for the suite
HUGE = 1 << 40  # a Content-Length no test sends or receives whole


def routes_to(name: str) -> Callable[[dict[str, int]], dict[str, Any]]:
    """``a.example.com`` → the backend ``name`` (a port of the harness's, or one of ours);
    ``b.example.com`` → the echo backend ``one``."""

    def make(ports: dict[str, int]) -> dict[str, Any]:
        return snapshot(
            hosts={"a.example.com": [ingress_path(name)], "b.example.com": [ingress_path("one")]},
            endpoints={name: [ports[name]], "one": [ports["one"]]},
        )

    return make


def head_of(sock: socket.socket) -> bytes:
    """Bytes up to the end of a response head."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, f"closed after {data!r}"
        data += chunk
    return data


def closed(sock: socket.socket) -> bool:
    """Whether the peer closed ``sock`` (what is left to read is read and dropped), rather
    than leaving it open past the socket's timeout."""
    try:
        while sock.recv(1 << 20):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return False
    return True


def metric(run: Running, name: str) -> float:
    """A sample of the proxy's metrics without labels (0 before it is first set)."""
    return run.proxy.metrics.registry.get_sample_value(name) or 0.0


def wait_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def others_are_served(run: Running) -> None:
    response, data = request(run.http_port, "GET", "/next", host="b.example.com")
    assert response.status == 200
    assert echoed(data)["target"] == "/next"


class Source:
    """A backend that answers its first request with an endless sized body, and notes when
    its connection is closed under it (a context manager: its listening socket)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.server.getsockname()[1]
        self.cut = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.server.close()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            head_of(conn)
            piece = b"x" * 65536
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % HUGE)
                while True:
                    conn.sendall(piece)
            except OSError:
                self.cut.set()


@contextlib.contextmanager
def listening_only() -> Iterator[int]:
    """A port whose connections complete in the kernel's backlog and are never read."""
    with socket.socket() as sink:
        sink.bind(("127.0.0.1", 0))
        sink.listen(8)
        yield sink.getsockname()[1]


def test_a_client_that_stops_reading_is_cut_and_so_is_its_upstream(tmp_path: Path) -> None:
    with Source() as source:
        run_proxy(
            tmp_path, _to(source), _reads_nothing(source), timeouts=Timeouts(client_send=SHORT)
        )


def _to(source: Source) -> Callable[[dict[str, int]], dict[str, Any]]:
    def make(ports: dict[str, int]) -> dict[str, Any]:
        return routes_to("source")({**ports, "source": source.port})

    return make


def _reads_nothing(source: Source) -> Callable[[Running], None]:
    def client(run: Running) -> None:
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
            # never read: the proxy's send waits, then gives up on this client and the
            # upstream connection that feeds it
            assert source.cut.wait(TIMEOUT), "the upstream connection was kept open"
            others_are_served(run)
            assert closed(sock)

    return client


def test_an_upstream_that_takes_no_request_bytes_is_504(tmp_path: Path) -> None:
    with listening_only() as sink:

        def make(ports: dict[str, int]) -> dict[str, Any]:
            return routes_to("sink")({**ports, "sink": sink})

        def client(run: Running) -> None:
            with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:

                def send_body() -> None:
                    with contextlib.suppress(OSError):  # the proxy closes after its answer
                        sock.sendall(
                            b"POST /up HTTP/1.1\r\nHost: a.example.com\r\n"
                            b"Content-Length: %d\r\n\r\n" % HUGE
                        )
                        piece = b"y" * 65536
                        while True:
                            sock.sendall(piece)

                sender = threading.Thread(target=send_body, daemon=True)
                sender.start()
                head = head_of(sock)
                assert head.startswith(b"HTTP/1.1 504 "), head
                assert b"connection: close" in head.lower()
                body = sock.recv(4096)
                assert b"the upstream took no bytes for 0.3 s" in head + body, head + body
                sock.shutdown(socket.SHUT_RDWR)
                sender.join(TIMEOUT)
            others_are_served(run)

        run_proxy(tmp_path, make, client, timeouts=Timeouts(send=SHORT))


def test_a_silent_tunnel_is_closed_and_a_busy_one_is_not() -> None:
    """The idle timeout counts silence in both directions; every piece copied starts it again
    (on trio's mock clock: the watchdog's ticks are exact)."""
    outcomes: dict[str, bool] = {}

    async def main() -> None:
        watchdog = Watchdog(0.1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watchdog.run)
            busy = Idle(watchdog, 1.0)
            with busy.scope:
                busy.activity()
                for _ in range(20):  # 10 s of traffic, a piece each half second
                    await trio.sleep(0.5)
                    busy.activity()
            outcomes["busy cut"] = busy.scope.cancelled_caught
            silent = Idle(watchdog, 1.0)
            with silent.scope:
                silent.activity()
                await trio.sleep(0.5)
                silent.activity()
                await trio.sleep(10)
            outcomes["silent cut"] = silent.scope.cancelled_caught
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert outcomes == {"busy cut": False, "silent cut": True}


def test_a_websocket_that_goes_silent_is_closed(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        with socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT) as sock:
            sock.sendall(
                b"GET /ws HTTP/1.1\r\nHost: a.example.com\r\n"
                b"Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
            )
            assert head_of(sock).startswith(b"HTTP/1.1 101 ")
            sock.sendall(b"hello")
            assert sock.recv(4096) == b"HELLO"  # the tunnel carries bytes both ways
            assert sock.recv(4096) == b""  # then silence: the proxy closes it
        others_are_served(run)

    run_proxy(tmp_path, routes_to("one"), client, timeouts=Timeouts(tunnel_idle=SHORT))


def test_at_the_limit_the_longest_idle_connection_gives_way(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        socks = []
        try:
            for count in range(1, 5):  # the limit: four connections waiting for a request head
                sock = socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT)
                socks.append(sock)
                sock.sendall(b"GET / HTTP/1.1\r\n")  # a head that never ends
                wait_until(
                    lambda count=count: metric(run, "coxswain_open_connections") == count
                )  # in this order
            for _ in range(2):  # each newcomer closes the connection that has waited longest
                sock = socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT)
                socks.append(sock)
                sock.sendall(b"GET /next HTTP/1.1\r\nHost: b.example.com\r\n\r\n")
                assert head_of(sock).startswith(b"HTTP/1.1 200 ")
            assert closed(socks[0])
            assert closed(socks[1])
            assert metric(run, "coxswain_connections_shed_total") == 2
            for sock in socks[2:4]:  # the others were left alone: their heads end, and are answered
                sock.sendall(b"Host: b.example.com\r\n\r\n")
                assert head_of(sock).startswith(b"HTTP/1.1 200 ")
        finally:
            for sock in socks:
                sock.close()

    run_proxy(tmp_path, routes_to("one"), client, max_connections=4)


def test_no_connection_is_shed_while_its_request_is_answered(tmp_path: Path) -> None:
    def client(run: Running) -> None:
        busy = []
        try:
            for _ in range(2):  # the limit, both sending a request body that has not ended
                sock = socket.create_connection(("127.0.0.1", run.http_port), timeout=TIMEOUT)
                busy.append(sock)
                sock.sendall(
                    b"POST / HTTP/1.1\r\nHost: b.example.com\r\nContent-Length: 9\r\n\r\nab"
                )
            # Until the proxy has read both heads, a busy connection still counts as waiting
            # for one, and is rightly closed for the newcomer.
            room = run.proxy._capacity
            wait_until(lambda: room.open == 2 and not room.idle)
            with socket.create_connection(("127.0.0.1", run.http_port), timeout=0.5) as late:
                late.sendall(b"GET / HTTP/1.1\r\nHost: b.example.com\r\n\r\n")
                try:  # waits in the backlog: nothing is closed for it, nothing answers it yet
                    early: bytes | None = late.recv(4096)
                except TimeoutError:
                    early = None
                assert early is None, early
                busy[0].close()  # one request ends: the newcomer is served
                late.settimeout(TIMEOUT)
                assert head_of(late).startswith(b"HTTP/1.1 200 ")
            busy[1].sendall(b"cdefghi")  # the other was left alone: its request is answered
            assert head_of(busy[1]).startswith(b"HTTP/1.1 200 ")
        finally:
            for sock in busy:
                sock.close()

    run_proxy(tmp_path, routes_to("one"), client, max_connections=2)


def test_the_admin_port_answers_when_the_open_file_limit_runs_out(tmp_path: Path) -> None:
    """Four hundred idle connections against a proxy process allowed 300 descriptors: without
    a connection limit its accepts fail with EMFILE, the admin port's too, so that neither
    the 271st client nor /healthz is answered (a kubelet would restart the proxy)."""
    file = tmp_path / "snapshot.json"
    backend = socket.create_server(("127.0.0.1", 0))
    write_snapshot(
        file,
        snapshot(
            hosts={"a.example.com": [ingress_path("one")]},
            endpoints={"one": [backend.getsockname()[1]]},
        ),
    )
    http_port, admin_port = free_port(), free_port()

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))

    command = proxy_command(file, http_port, admin_port)
    with (
        backend,
        subprocess.Popen(
            command, stderr=subprocess.PIPE, text=True, preexec_fn=few_descriptors
        ) as process,
    ):
        flood: list[socket.socket] = []
        try:
            started = "".join(read_until(process, "serving shared"))
            assert "--max-connections 16384 lowered to 22" in started
            assert process.stderr is not None  # read on, or the access log fills the pipe
            threading.Thread(target=process.stderr.read, daemon=True).start()
            for _ in range(400):  # each answered (404: no route) and left open, idle
                sock = socket.create_connection(("127.0.0.1", http_port), timeout=TIMEOUT)
                flood.append(sock)
                sock.sendall(b"GET / HTTP/1.1\r\nHost: nowhere.example\r\n\r\n")
                assert head_of(sock).startswith(b"HTTP/1.1 404 ")
            assert closed(flood[0])  # given way to later ones
            with socket.create_connection(("127.0.0.1", admin_port), timeout=TIMEOUT) as probe:
                probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: admin\r\n\r\n")
                assert head_of(probe).startswith(b"HTTP/1.1 200 ")
            assert process.poll() is None
        finally:
            for sock in flood:
                sock.close()
            process.terminate()
            process.wait(TIMEOUT)


def test_connections_that_send_nothing_do_not_keep_probes_off_the_admin_port(
    tmp_path: Path,
) -> None:
    """More silent connections than the admin port has places: each probe takes the place of
    the one silent longest, rather than waiting for one to time out (10 s)."""

    def client(run: Running) -> None:
        silent = [
            socket.create_connection(("127.0.0.1", run.admin_port), timeout=TIMEOUT)
            for _ in range(ADMIN_MAX_CONNECTIONS + 8)
        ]
        try:
            for _ in range(3):
                with socket.create_connection(
                    ("127.0.0.1", run.admin_port), timeout=ADMIN_TIMEOUT / 2
                ) as probe:
                    probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: admin\r\n\r\n")
                    assert head_of(probe).startswith(b"HTTP/1.1 200 ")
            assert closed(silent[0])
        finally:
            for sock in silent:
                sock.close()

    run_proxy(tmp_path, routes_to("one"), client)
