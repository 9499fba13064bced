"""End-to-end helpers for tests that run ``coxswain`` commands as processes: the command line, one
GET to an address, and waiting until an address routes a host to a backend."""

from __future__ import annotations

import http.client
import sys

import trio


def get(address: str, port: int, host: str, path: str = "/") -> tuple[int, bytes]:
    """One GET; (0, b"") when nothing answers."""
    try:
        conn = http.client.HTTPConnection(address, port, timeout=5)
        conn.request("GET", path, headers={"Host": host})
        response = conn.getresponse()
        body = response.read()
        conn.close()
    except OSError:
        return 0, b""
    return response.status, body


async def served_by(address: str, port: int, host: str, backend: str) -> None:
    """Wait until ``address:port`` routes ``host`` to ``backend``."""
    while True:
        status, body = await trio.to_thread.run_sync(get, address, port, host)
        if status == 200 and f'"backend": "{backend}"'.encode() in body:
            return
        await trio.sleep(0.1)


def coxswain(*args: str) -> list[str]:
    return [sys.executable, "-m", "coxswain", *args]
