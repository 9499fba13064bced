"""A 100 MB body each way through the proxy process, with its memory bounded.

The proxy runs as its own process (``--workers 1``) so that its peak resident set
(``VmHWM`` in /proc) is its own: it must stay far below the 100 MB it carried each way, which
it can only do by streaming both bodies with backpressure, never holding one whole.
"""

from __future__ import annotations

import socket
import subprocess
import threading
from typing import TYPE_CHECKING

from .proxy_harness import (
    free_port,
    ingress_path,
    proxy_command,
    read_until,
    snapshot,
    write_snapshot,
)

if TYPE_CHECKING:
    from pathlib import Path

SIZE = 100 * 1024 * 1024
PIECE = 64 * 1024
PEAK_LIMIT_KB = 90 * 1024  # the interpreter and libraries take ~40 MB of it


class SinkSource:
    """One-request backend: reads the request body and drops it, then sends SIZE bytes."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.server.getsockname()[1]
        self.received = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        connection, _ = self.server.accept()
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(PIECE)
            head, rest = data.split(b"\r\n\r\n", 1)
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            self.received = len(rest)
            while self.received < length:
                self.received += len(connection.recv(PIECE))
            connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % SIZE)
            piece = b"y" * PIECE
            for _ in range(SIZE // PIECE):
                connection.sendall(piece)


def peak_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1])


def test_100_mb_each_way_streams_with_bounded_memory(tmp_path: Path) -> None:
    backend = SinkSource()
    file = tmp_path / "snapshot.json"
    write_snapshot(
        file,
        snapshot(hosts={"a.example.com": [ingress_path("one")]}, endpoints={"one": [backend.port]}),
    )
    http_port = free_port()
    command = proxy_command(file, http_port, free_port())
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            read_until(process, "serving shared")
            with socket.create_connection(("127.0.0.1", http_port), timeout=30) as client:
                client.sendall(
                    b"POST /up HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: %d\r\n\r\n" % SIZE
                )
                piece = b"x" * PIECE
                for _ in range(SIZE // PIECE):
                    client.sendall(piece)
                answer = b""
                while b"\r\n\r\n" not in answer:
                    answer += client.recv(PIECE)
                head, body = answer.split(b"\r\n\r\n", 1)
                assert head.startswith(b"HTTP/1.1 200 ")
                got = len(body)
                while got < SIZE:
                    chunk = client.recv(PIECE)
                    assert chunk, f"closed after {got} bytes"
                    got += len(chunk)
            assert backend.received == SIZE
            assert got == SIZE
            assert peak_kb(process.pid) < PEAK_LIMIT_KB
        finally:
            process.terminate()
            process.wait(10)
            backend.server.close()
