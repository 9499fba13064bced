"""``pool.connect``: the next endpoint after a failure, and a timeout per endpoint that tells
a 504 (every endpoint timed out) from a 502 (one refused)."""

from __future__ import annotations

import socket

import pytest
import trio

from coxswain.compile.snapshot import Endpoint
from coxswain.shell.dataplane import pool
from coxswain.shell.dataplane.pool import ConnectFailed, connect

SILENT = "192.0.2.1"  # TEST-NET-1 (RFC 5737): its connects are made to hang below


def _refused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def silent_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Connecting to SILENT never completes, as to a host that drops SYNs."""
    real = trio.open_tcp_stream

    async def open_tcp_stream(host: str, port: int) -> trio.SocketStream:
        if host == SILENT:
            await trio.sleep_forever()
        return await real(host, port)

    monkeypatch.setattr(pool.trio, "open_tcp_stream", open_tcp_stream)


def _connect(endpoints: list[Endpoint]) -> ConnectFailed:
    async def main() -> ConnectFailed:
        with pytest.raises(ConnectFailed) as info:
            await connect(endpoints, None, within=0.05)
        return info.value

    return trio.run(main)


@pytest.mark.usefixtures("silent_hangs")
def test_every_endpoint_timing_out_is_a_timeout() -> None:
    failed = _connect([Endpoint(address=SILENT, port=80), Endpoint(address=SILENT, port=81)])
    assert failed.timed_out
    assert "192.0.2.1:81: no answer within 0.05 s" in str(failed)


@pytest.mark.usefixtures("silent_hangs")
def test_a_refusal_among_timeouts_is_not_a_timeout() -> None:
    failed = _connect(
        [Endpoint(address=SILENT, port=80), Endpoint(address="127.0.0.1", port=_refused_port())]
    )
    assert not failed.timed_out


@pytest.mark.usefixtures("silent_hangs")
def test_a_hanging_endpoint_is_passed_over_for_the_next() -> None:
    async def main() -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        stream, endpoint, reused = await connect(
            [Endpoint(address=SILENT, port=80), Endpoint(address="127.0.0.1", port=port)],
            None,
            within=0.05,
        )
        assert endpoint == ("127.0.0.1", port)
        assert not reused
        await stream.aclose()
        for listener in listeners:
            await listener.aclose()

    trio.run(main)
